"""Scheduling a campaign: agent workers apart from GPU evaluation, an exclusive per-GPU lock, and the
interleaved re-timing of finalists.

- **Agent concurrency** is the number of workers (``--agent-concurrency K``): each runs one job at a
  time, and most of a job's wall time is the agent thinking, which needs no GPU. Workers are spread
  round-robin over the GPUs (``CUDA_VISIBLE_DEVICES`` names one per worker), so K may exceed the GPU
  count.
- **GPU evaluation slots**: one per GPU. A worker judges a kernel only while it holds its GPU's
  ``GpuLock`` — an ``flock`` on ``<lock dir>/gpu-<index>.lock``, shared by every campaign on the host —
  so two timings never share a GPU, while the other workers' agents keep working. ``EvaluationGate``
  takes the lock when a solve reports ``evaluating`` or ``final`` and gives it back at its next report.
- **Finalists**: at the end, the final kernel of every job that passed is timed again on one GPU,
  round-robin over the finalists for several rounds (``interleaved_order``), so clock and thermal drift
  touch every finalist alike; the medians are recorded as ``retime`` events and in
  ``RUN_DIR/finalists.json``.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from kernellab.evaluate.options import default_cache_dir
from kernellab.score.store import Store
from kernellab.score.store_records import RunRecord

log = logging.getLogger(__name__)

FINALISTS_FILE = "finalists.json"
EVALUATING_PHASES = frozenset({"evaluating", "final"})


@dataclass(frozen=True)
class WorkerSlot:
    name: str
    gpu: int | None  # None: interpreter mode (no GPU)


def plan_slots(gpus: Sequence[int], agent_concurrency: int) -> list[WorkerSlot]:
    """``agent_concurrency`` workers, spread round-robin over ``gpus`` (none: interpreter workers)."""
    if agent_concurrency < 1:
        raise ValueError(f"--agent-concurrency must be at least 1, not {agent_concurrency}")
    return [WorkerSlot(f"w{i}", gpus[i % len(gpus)] if gpus else None) for i in range(agent_concurrency)]


def lock_dir() -> Path:
    return Path(os.environ.get("KERNELLAB_LOCK_DIR", default_cache_dir() / "locks"))


class GpuLock:
    """Exclusive use of one GPU for evaluation, across processes and campaigns on this host. The
    kernel releases an ``flock`` when its holder dies, so a killed worker never leaves it taken."""

    def __init__(self, gpu: int, directory: Path | None = None) -> None:
        self.gpu = gpu
        self.path = (directory or lock_dir()) / f"gpu-{gpu}.lock"
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> None:
        if self._fd is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class EvaluationGate:
    """A solve's ``progress`` callback that holds the GPU lock while the solve judges a kernel."""

    def __init__(self, lock: GpuLock | None, forward: Any = None) -> None:
        self.lock = lock
        self.forward = forward

    def __call__(self, progress: Any) -> None:
        if self.lock is not None:
            if progress.phase in EVALUATING_PHASES:
                self.lock.acquire()
            else:
                self.lock.release()
        if self.forward is not None:
            self.forward(progress)

    def close(self) -> None:
        if self.lock is not None:
            self.lock.release()


# ------------------------------------------------------------------------------------ finalists


@dataclass(frozen=True)
class Finalist:
    job_id: int
    task_id: str
    agent: str
    seed: int
    kernel: Path


def finalists(store: Store, run: RunRecord) -> list[Finalist]:
    """The final kernel of every job of ``run`` whose final verdict passed."""
    jobs = {j.id: j for j in store.jobs(run.id, status="done")}
    out = []
    for a in store.attempts(run_id=run.id):
        job = jobs.get(a.job_id)
        path = store.kernel_path(a)
        if job is None or not a.final or not a.verdict or a.verdict.get("status") != "passed" or path is None:
            continue
        out.append(Finalist(job.id, job.task_id, job.agent, job.seed, path))
    return out


def interleaved_order(items: Sequence[Any], rounds: int) -> list[Any]:
    """Round-robin over ``items`` for ``rounds`` rounds, each round starting one item later, so no item
    is always timed first (or right after the same neighbour)."""
    order = []
    n = len(items)
    for r in range(rounds):
        order.extend(items[(r + i) % n] for i in range(n))
    return order


def retime_finalists(store: Store, run: RunRecord, gpu: int, *, rounds: int = 3) -> dict[str, Any]:
    """Time every finalist again on ``gpu`` (this process must see it as its only device), interleaved,
    holding its lock throughout; record a ``retime`` event per job and ``finalists.json``."""
    from kernellab.evaluate.options import EvalOptions, with_stages
    from kernellab.evaluate.session import EvalSession
    from kernellab.evaluate.verdict import Stage
    from kernellab.tasks.load import load_task

    chosen = finalists(store, run)
    by_task: dict[str, list[Finalist]] = {}
    for f in chosen:
        by_task.setdefault(f.task_id, []).append(f)
    options = with_stages(EvalOptions(device="cuda", compile_baseline=False, time_holdout=False), Stage.SMOKE,
                          Stage.TIMING)
    samples: dict[int, list[float]] = {f.job_id: [] for f in chosen}
    with GpuLock(gpu):
        for task_id, group in by_task.items():
            with EvalSession(load_task(task_id), options) as session:
                for f in interleaved_order(group, rounds):
                    verdict = session.evaluate(f.kernel)
                    speedup = (verdict.speedup or {}).get("vs_eager")
                    if speedup:
                        samples[f.job_id].append(speedup)
    document = {"gpu": gpu, "rounds": rounds, "finalists": []}
    for f in chosen:
        xs = samples[f.job_id]
        entry = {"job_id": f.job_id, "task": f.task_id, "agent": f.agent, "seed": f.seed,
                 "speedup_vs_eager_median": statistics.median(xs) if xs else None, "samples": xs}
        document["finalists"].append(entry)
        store.record_event(f.job_id, "retime", entry)
    (store.run_dir / FINALISTS_FILE).write_text(json.dumps(document, indent=1) + "\n")
    return document
