"""Scheduling a campaign: agent workers apart from GPU evaluation, an exclusive per-GPU lock, and the
interleaved re-timing of finalists.

- **Agent concurrency** is the number of workers (``--agent-concurrency K``): each runs one job at a
  time, and most of a job's wall time is the agent thinking, which needs no GPU. Workers are spread
  round-robin over the GPUs (``CUDA_VISIBLE_DEVICES`` names one per worker), so K may exceed the GPU
  count.
- **GPU evaluation slots**: one per GPU. A worker judges a kernel only while it holds its GPU's
  ``GpuLock`` — an ``flock`` on ``<lock dir>/gpu-<name>.lock`` (``physical_gpu``: its entry in
  ``CUDA_VISIBLE_DEVICES``, so one name whatever each process sees), shared by every campaign on the host —
  so two timings never share a GPU, while the other workers' agents keep working. ``EvaluationGate``
  takes the lock when a solve reports ``evaluating`` or ``final`` and gives it back at its next report.
  Its scope is ``evaluation`` (the lock held exclusively for the whole evaluation) or ``timing``: the
  lock held *shared* while a kernel is judged (correctness checks of several workers overlap on the
  GPU) and *exclusively* around each timing (``gpu_sharing.set_guards(lock.exclusive, lock.alone)``), so a timing still has the GPU
  to itself. A turnstile (``gpu-<name>.turn.lock``) keeps a waiting timing from being starved by a
  stream of correctness checks.
- **Finalists**: at the end, the final kernel of every job that passed is timed again on one GPU,
  round-robin over the finalists for several rounds (``interleaved_order``), so clock and thermal drift
  touch every finalist alike. Every round's result is stored as it comes (a ``retime_sample`` event),
  so a re-timing that is stopped continues where it was on ``--resume``; the summaries are recorded
  as ``retime`` events and in ``RUN_DIR/finalists.json``.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import json
import logging
import os
import re
import statistics
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from kernellab.evaluate.gpu_sharing import give_back_memory
from kernellab.evaluate.options import default_cache_dir
from kernellab.evaluate.verdict import Status
from kernellab.sandbox.timing_stats import ratio_interval
from kernellab.score.store import Store
from kernellab.score.store_records import RETIME, RETIME_SAMPLE, RunRecord

log = logging.getLogger(__name__)

FINALISTS_FILE = "finalists.json"
EVALUATING_PHASES = frozenset({"evaluating", "final"})
LOCK_SCOPES = ("evaluation", "timing")


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


def physical_gpu(index: int, environ: Mapping[str, str] | None = None) -> str:
    """The host-wide name of this process's visible GPU ``index``: its entry in ``CUDA_VISIBLE_DEVICES``
    (an index, a ``GPU-`` UUID or a MIG name), or the index where that is unset. Locks are named by it
    and workers are pointed at it, so a campaign started with ``CUDA_VISIBLE_DEVICES=2,3`` runs on GPUs
    2 and 3 and shares their locks with every other process on the host, not those of GPUs 0 and 1."""
    visible = (os.environ if environ is None else environ).get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return str(index)
    entries = [entry.strip() for entry in visible.split(",") if entry.strip()]
    if not 0 <= index < len(entries):
        raise ValueError(f"GPU {index} is not visible here (CUDA_VISIBLE_DEVICES={visible!r})")
    return entries[index]


class _FileLock:
    """One ``flock``ed file held shared or exclusive, with a turnstile (a second file) that a newcomer
    passes before queueing, so a waiting exclusive holder is not starved by a stream of shared ones.
    Changing from shared to exclusive lets the shared hold go first (``flock`` cannot convert
    atomically), then queues at the turnstile like any newcomer; nothing waits on a turnstile while
    holding its lock, so no two holders can deadlock on it. Exclusive to shared is a downgrade in
    place, which nobody can overtake."""

    def __init__(self, path: Path, turnstile: Path) -> None:
        self.path = path
        self.turnstile = turnstile
        self.fd: int | None = None
        self.mode: str | None = None  # None, "shared" or "exclusive"

    def take(self, mode: str) -> None:
        if self.mode == mode:
            return
        if self.mode == "exclusive":
            fcntl.flock(self.fd, fcntl.LOCK_SH)
            self.mode = mode
            return
        if self.fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        elif self.mode == "shared":
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            self.mode = None
        turn = os.open(self.turnstile, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(turn, fcntl.LOCK_EX)
            fcntl.flock(self.fd, fcntl.LOCK_EX if mode == "exclusive" else fcntl.LOCK_SH)
            self.mode = mode
        except BaseException:
            self.release()
            raise
        finally:
            os.close(turn)  # closing it releases the turnstile

    def release(self) -> None:
        if self.fd is None:
            return
        fd, self.fd, self.mode = self.fd, None, None
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


class GpuLock:
    """Use of one GPU for evaluation, across processes and campaigns on this host: held exclusively
    (``acquire``: a timing, or a whole evaluation) or shared (``acquire_shared``: correctness checks,
    which may overlap each other but never a timing). The kernel releases an ``flock`` when its holder
    dies, so a killed worker never leaves it taken.

    A second lock, *presence*, is held shared for the whole of an evaluation (``begin``/``end``),
    timings included: a timing gives up its shared hold of the GPU to take it exclusively, but its
    memory stays allocated. ``alone`` takes presence exclusively, so an evaluation that ran out of
    device memory beside others runs again once every other evaluation on the GPU has ended. Presence
    is always taken before the GPU lock and never while holding it, so the two cannot deadlock.

    One ``GpuLock`` per GPU and process: ``flock`` locks belong to an open file, so two objects on
    the same file in one process exclude each other like two processes do."""

    def __init__(self, gpu: int | str, directory: Path | None = None) -> None:
        """``gpu``: the GPU's host-wide name (``physical_gpu``), not an index under another process's
        ``CUDA_VISIBLE_DEVICES``."""
        self.gpu = gpu
        folder = directory or lock_dir()
        name = "gpu-" + re.sub(r"[^A-Za-z0-9_.-]", "_", str(gpu))  # a MIG name holds slashes
        self._use = _FileLock(folder / f"{name}.lock", folder / f"{name}.turn.lock")
        self._presence = _FileLock(folder / f"{name}.presence.lock", folder / f"{name}.presence.turn.lock")
        self.path = self._use.path
        self.turnstile = self._use.turnstile
        self._mutex = threading.RLock()  # the threads of one process take turns in changing the mode

    @property
    def mode(self) -> str | None:
        return self._use.mode

    @property
    def held(self) -> bool:
        return self._use.mode is not None

    def acquire(self) -> None:
        """Exclusive use (a shared hold is given up first)."""
        with self._mutex:
            self._use.take("exclusive")

    def acquire_shared(self) -> None:
        """Shared use: alongside other shared holders, never alongside an exclusive one."""
        with self._mutex:
            self._use.take("shared")

    def release(self) -> None:
        with self._mutex:
            self._use.release()

    def begin(self, mode: str) -> None:
        """An evaluation starts (or goes on) with the GPU held in ``mode``, its presence announced."""
        with self._mutex:
            if self._presence.mode is None:
                self._use.release()  # presence first, never while holding the GPU
                self._presence.take("shared")
            self._use.take(mode)

    def end(self) -> None:
        """The evaluation is over: the GPU and presence given back."""
        with self._mutex:
            self._use.release()
            self._presence.release()

    @contextlib.contextmanager
    def exclusive(self) -> Iterator[None]:
        """Exclusive use for the block (a timing), then back to what was held before."""
        with self._mutex:
            before = self.mode
            self.acquire()
            try:
                yield
            finally:
                if before == "shared":
                    self.acquire_shared()
                elif before is None:
                    self.release()

    @contextlib.contextmanager
    def alone(self) -> Iterator[None]:
        """The GPU exclusively, once no other evaluation is on it (each one's memory freed), then back
        to what was held before."""
        with self._mutex:
            before, present = self.mode, self._presence.mode
            self._use.release()
            self._presence.release()
            self._presence.take("exclusive")
            self._use.take("exclusive")
            try:
                yield
            finally:
                self._use.release()
                if present:
                    self._presence.take("shared")
                else:
                    self._presence.release()
                if before is not None:
                    self._use.take(before)

    def __enter__(self) -> Self:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class EvaluationGate:
    """A solve's ``progress`` callback that holds the GPU lock while the solve judges a kernel:
    exclusively (scope ``evaluation``), or shared with the timings exclusive (scope ``timing``, with
    the evaluator's timing guard set to the lock's ``exclusive`` in this process)."""

    def __init__(self, lock: GpuLock | None, forward: Any = None, scope: str = "evaluation") -> None:
        if scope not in LOCK_SCOPES:
            raise ValueError(f"lock scope {scope!r} is not one of {', '.join(LOCK_SCOPES)}")
        self.lock = lock
        self.forward = forward
        self.scope = scope

    def __call__(self, progress: Any) -> None:
        if self.lock is not None:
            if progress.phase not in EVALUATING_PHASES:
                if self.lock.held:
                    give_back_memory()  # what the evaluation freed, to the others on this GPU
                self.lock.end()
            else:
                self.lock.begin("shared" if self.scope == "timing" else "exclusive")
        if self.forward is not None:
            self.forward(progress)

    def close(self) -> None:
        if self.lock is not None:
            gc.collect()  # the job's sessions and their cases, then their memory back to the GPU
            give_back_memory()
            self.lock.end()


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
        if job is None or not a.final or a.verdict is None or a.verdict.status is not Status.PASSED or path is None:
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


def retime_options(run: RunRecord):
    """How finalists are re-timed: as the campaign's jobs were (its ``--eval-option``: dtypes, timing
    budget, the compile baseline), on their seen configs, after a smoke check, with eager timed again
    in every round: the rounds' spread then holds the baseline's run-to-run variation too (with a
    cached eager time, the finalists of one task all moved with that one measurement between runs)."""
    from kernellab.evaluate.options import EvalOptions, with_stages
    from kernellab.evaluate.verdict import Stage
    from kernellab.run.campaign import CampaignSpec

    overrides = {"compile_baseline": False, **CampaignSpec.from_dict(run.config).evaluation_overrides(),
                 "time_holdout": False, "cached_baselines": False}
    return with_stages(EvalOptions(device="cuda", **overrides), Stage.SMOKE, Stage.TIMING)


def retime_finalists(store: Store, run: RunRecord, gpu: int, *, rounds: int = 3,
                     progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Time every finalist again on visible GPU ``gpu`` (this process must see it as its only device), interleaved,
    holding its lock throughout; record a ``retime`` event per job and ``finalists.json`` (per job:
    the rounds' speedups, their median, geometric mean and 95% interval over the rounds).

    Each round's evaluation is stored as a ``retime_sample`` event the moment it ends, and rounds a
    job already has are not run again: a re-timing stopped halfway (a timeout, a kill) goes on from
    there when called again. ``progress`` gets one line per evaluation."""
    from kernellab.evaluate.session import EvalSession
    from kernellab.tasks.load import load_task

    chosen = sorted(finalists(store, run), key=lambda f: (f.task_id, f.job_id))
    options = retime_options(run)
    samples = {f.job_id: recorded_samples(store, f.job_id) for f in chosen}
    total = len(chosen) * rounds
    done = sum(min(len(xs), rounds) for xs in samples.values())
    if progress and done:
        progress(f"{done}/{total} re-timings recorded already: going on from there")
    # Round after round over every finalist, not every round of one task at once: a finalist's rounds
    # are then minutes apart, and what the device's state does over minutes is in their spread.
    todo = _rounds_left(interleaved_order(chosen, rounds), samples)
    sessions: dict[str, EvalSession] = {}
    current = None
    with GpuLock(physical_gpu(gpu)), contextlib.ExitStack() as stack:
        for f in todo:
            if f.task_id != current and current is not None:
                sessions[current].drop_cases()  # its memory back until its next round
            current = f.task_id
            if f.task_id not in sessions:
                sessions[f.task_id] = stack.enter_context(EvalSession(load_task(f.task_id), options))
            verdict = sessions[f.task_id].evaluate(f.kernel)
            speedup = (verdict.speedup or {}).get("vs_eager")
            sample = {"round": len(samples[f.job_id]) + 1, "speedup_vs_eager": speedup,
                      "status": verdict.status.value,
                      # per timing row: eager is measured in every round, so these differ between rounds
                      "eager_us": [t.eager_us for t in verdict.timings or []],
                      "candidate_us": [t.candidate_us for t in verdict.timings or []]}
            store.record_event(f.job_id, RETIME_SAMPLE, sample)
            samples[f.job_id].append(sample)
            done += 1
            if progress:
                shown = f"x{speedup:.3f}" if speedup else verdict.status.value
                progress(f"{done}/{total} {f.task_id} {f.agent} round {sample['round']}: {shown}")
    document = {"gpu": physical_gpu(gpu), "rounds": rounds, "finalists": []}
    for f in chosen:
        xs = [s["speedup_vs_eager"] for s in samples[f.job_id][:rounds] if s["speedup_vs_eager"]]
        interval = ratio_interval(xs)
        entry = {"job_id": f.job_id, "task": f.task_id, "agent": f.agent, "seed": f.seed,
                 "speedup_vs_eager_median": statistics.median(xs) if xs else None, "samples": xs,
                 # over the rounds, each a fresh child at another moment: run-to-run variation included
                 "speedup_vs_eager_geomean": interval[0] if interval else None,
                 "speedup_vs_eager_ci95": list(interval[1:]) if interval else None}
        document["finalists"].append(entry)
        store.record_event(f.job_id, RETIME, entry)
    (store.run_dir / FINALISTS_FILE).write_text(json.dumps(document, indent=1) + "\n")
    return document


def recorded_samples(store: Store, job_id: int) -> list[dict[str, Any]]:
    """The re-timing rounds ``job_id`` has already had, in order."""
    return [e.payload for e in store.events(job_id, RETIME_SAMPLE)]


def _rounds_left(order: list[Finalist], samples: dict[int, list[Any]]) -> list[Finalist]:
    """``order`` (``interleaved_order`` of the finalists) without the rounds each already has."""
    seen: dict[int, int] = {}
    left = []
    for f in order:
        seen[f.job_id] = seen.get(f.job_id, 0) + 1
        if seen[f.job_id] > len(samples[f.job_id]):
            left.append(f)
    return left
