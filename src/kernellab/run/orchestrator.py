"""``run_campaign``: open (or resume) the campaign's store, start the backend's workers, show the
progress, re-time the finalists on a GPU, and say how it ended.

The orchestrator holds no job itself: local workers claim jobs from the store atomically (the Ray
backend claims them here, for its workers, under this process's host and pid), so killing the
orchestrator (even with SIGKILL) loses nothing — its workers end with it, and ``--resume`` puts their
running jobs back to pending and goes on; finished jobs are never run again.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from kernellab.report.cells import plural
from kernellab.run.campaign import CampaignError, CampaignSpec, Placement, open_campaign
from kernellab.run.progress import CampaignProgress, Standing
from kernellab.run.scheduler import FINALISTS_FILE, LOCK_SCOPES, physical_gpu, plan_slots

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CampaignOutcome:
    run_dir: Path
    run_id: int
    standing: Standing
    interrupted: bool
    worker_status: dict[str, int]
    finalists: dict[str, Any] | None = None

    @property
    def exit_code(self) -> int:
        """0 every job finished, 1 some did not (a worker failed), 130 interrupted."""
        if self.interrupted:
            return 130
        unfinished = self.standing.counts.get("pending", 0) + self.standing.counts.get("running", 0)
        return 1 if unfinished else 0


def detect_gpus() -> tuple[tuple[int, ...], str]:
    """The GPUs of this machine (indices) and their names, without creating a CUDA context here."""
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=index,name", "--format=csv,noheader"],
                                 capture_output=True, text=True, timeout=30, check=True).stdout
            rows = [line.split(",", 1) for line in out.splitlines() if line.strip()]
            if rows:
                return tuple(int(r[0]) for r in rows), "; ".join(sorted({r[1].strip() for r in rows}))
        except (subprocess.SubprocessError, OSError, ValueError):
            pass
    try:
        import torch

        n = torch.cuda.device_count()
    except Exception:  # noqa: BLE001 — no usable torch or driver: no GPU
        n = 0
    return tuple(range(n)), "cuda" if n else ""


def plan_placement(*, gpus: tuple[int, ...] | None, backend: str, address: str | None,
                   agent_concurrency: int | None, device: str | None = None,
                   lock_scope: str = "evaluation") -> Placement:
    """Where to run. No GPU (or ``device='cpu'``): interpreter mode, correctness only. With GPUs and no
    ``agent_concurrency``, one worker per GPU. ``lock_scope``: ``evaluation`` or ``timing``
    (``scheduler.EvaluationGate``)."""
    if lock_scope not in LOCK_SCOPES:
        raise CampaignError(f"--gpu-lock {lock_scope!r} is not one of {', '.join(LOCK_SCOPES)}")
    found, name = ((), "") if device == "cpu" else detect_gpus()
    if gpus is not None and device != "cpu":
        missing = sorted(set(gpus) - set(found)) if backend == "local" else []
        if missing:
            raise CampaignError(f"--gpus names GPU {missing[0]}, which this machine does not have "
                                f"({', '.join(map(str, found)) or 'no GPU'})")
        found = tuple(gpus)
    if backend == "ray":
        interpret = device == "cpu" or (not found and gpus is None)
        if not interpret and gpus is None:
            found = (0,)
    else:
        interpret = not found
    if interpret:
        k = agent_concurrency or 1
        return Placement("interpret", backend, (), k, address, "cpu (Triton interpreter: correctness only)")
    k = agent_concurrency or len(found)
    return Placement("gpu", backend, found, k, address, name or "cuda", lock_scope)


def run_campaign(run_dir: Path, spec: CampaignSpec, placement: Placement, *, resume: bool, console: Console,
                 debug: bool = False, retime_rounds: int = 3) -> CampaignOutcome:
    """``retime_rounds``: rounds of the finalists' interleaved re-timing at the end (0: none)."""
    from kernellab.agents.base import registered
    from kernellab.agents.solve import plan_confinement
    from kernellab.agents.strategies import create_strategy

    agents = registered()
    for agent in spec.agents:
        if agent not in agents:
            raise CampaignError(f"unknown agent {agent!r}; known: {', '.join(agents)}")
    create_strategy(spec.strategy, **dict(spec.strategy_options))  # a bad option fails before anything is written
    from kernellab.agents.base import Budget

    Budget.parse(spec.budget)
    confinement = {a: plan_confinement(agents[a], a, spec.confine, None).to_dict() for a in spec.agents}
    confined = all(c["confined"] for c in confinement.values())
    run_dir = run_dir.expanduser().resolve()
    store, run = open_campaign(run_dir, spec, placement, confined=confined, confinement=confinement, resume=resume)
    try:
        slots = plan_slots(placement.gpus, placement.agent_concurrency)
        backend = _backend(placement, slots, debug)
        title = f"{run_dir.name} · {plural(len(spec.tasks), 'task')} × {plural(len(spec.agents), 'agent')} × " \
                f"{plural(spec.seeds, 'seed')} · " \
                f"{spec.strategy} · {placement.mode}"
        interrupted, status = False, {}
        with CampaignProgress(store, run.id, console, title, len(slots)) as progress:
            try:
                status = backend.run(run_dir, tick=progress.tick)
            except KeyboardInterrupt:
                interrupted = True
        final = progress.last
        finalists = None
        unfinished = final.counts.get("pending", 0) + final.counts.get("running", 0)
        if not interrupted and not unfinished and not placement.interpret and placement.backend == "local" \
                and retime_rounds > 0:
            console.print("re-timing the finalists, interleaved, on one GPU", markup=False, highlight=False)
            try:
                finalists = _retime(run_dir, placement.gpus[0], retime_rounds, console)
            except KeyboardInterrupt:  # the rounds done so far are stored: --resume goes on from there
                interrupted = True
        return CampaignOutcome(run_dir, run.id, final, interrupted, status, finalists)
    finally:
        store.close()


def _backend(placement: Placement, slots: list, debug: bool) -> Any:
    if placement.backend == "ray":
        from kernellab.run.backends.ray_backend import RayBackend

        return RayBackend(slots, interpret=placement.interpret, address=placement.address,
                          lock_scope=placement.lock_scope)
    if placement.backend != "local":
        raise CampaignError(f"--backend {placement.backend!r} is not local or ray")
    from kernellab.run.backends.local import LocalBackend

    return LocalBackend(slots, interpret=placement.interpret, debug=debug, lock_scope=placement.lock_scope)


_PROGRESS = "retime: "  # how the re-timing process marks its progress lines on stderr


def _retime(run_dir: Path, gpu: int, rounds: int, console: Console) -> dict[str, Any] | None:
    """In a process of its own that sees only ``gpu`` (the orchestrator never touches CUDA); its
    progress lines are shown as they come. Every finished round is in the store already, so a
    re-timing cut short goes on from there with ``--resume``."""
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": physical_gpu(gpu)}
    code = ("import sys; from pathlib import Path; from kernellab.score.store import Store; "
            "from kernellab.run.scheduler import retime_finalists; "
            "s = Store.open(Path(sys.argv[1]), create=False); "
            f"say = lambda line: print({_PROGRESS!r} + line, file=sys.stderr, flush=True); "
            "retime_finalists(s, s.latest_run(), int(sys.argv[2]), rounds=int(sys.argv[3]), progress=say)")
    other: list[str] = []
    with subprocess.Popen([sys.executable, "-c", code, str(run_dir), "0", str(rounds)], env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith(_PROGRESS):
                console.print(line[len(_PROGRESS):].rstrip(), markup=False, highlight=False)
            elif line.strip():
                other.append(line.rstrip())
    if proc.returncode != 0:
        log.warning("re-timing the finalists failed: %s", other[-1:] or f"exit {proc.returncode}")
        return None
    return json.loads((run_dir / FINALISTS_FILE).read_text())
