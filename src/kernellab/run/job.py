"""One campaign job: ``solve`` into ``RUN_DIR/jobs/<job-key>/``, then its attempts and events copied
into the campaign store and the job finished, in one transaction.

Resuming is the solve's own: a job whose folder holds an unfinished solve continues it with
``resume=True`` (its recorded proposals are kept, not asked for again); a job whose solve finished but
was not yet copied (the worker died in between) is only copied. Nothing is copied twice: the copy and
finishing the job commit together, and a finished job is never claimed again.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernellab.run.campaign import JOBS_DIR, CampaignSpec
from kernellab.run.queue import JobQueue
from kernellab.score.artifacts import job_dir_name
from kernellab.score.store import DB_NAME, Store, StoreError
from kernellab.score.store_records import JobRecord

log = logging.getLogger(__name__)

# solve statuses that score the job (its verdict is the agent's result, good or bad)
SCORED = ("passed", "failed", "holdout_failed", "no_candidate")


@dataclass(frozen=True)
class JobOutcome:
    status: str  # a solve status, or "error" / "interrupted"
    job_status: str | None  # "done" | "failed", or None when the job was put back to pending
    error: str | None = None


def job_dir(run_dir: Path, job: JobRecord) -> Path:
    return run_dir / JOBS_DIR / job_dir_name(job.id, job.task_id, job.agent, job.seed, job.strategy)


def execute_job(store: Store, job: JobRecord, spec: CampaignSpec, *, interpret: bool,
                progress: Callable[[Any], None] | None = None,
                stopping: Callable[[], bool] = lambda: False) -> JobOutcome:
    """Run ``job`` to its end and record it in ``store`` (the campaign's). Ctrl-C puts it back to pending,
    and so does a failure once ``stopping()`` says a stop was asked for: the signal reaches the solve's
    own processes too (its evaluation children, an agent's CLI), and what fails then is not the job's."""
    out = job_dir(store.run_dir, job)
    end = run_solve(job.task_id, job.agent, job.seed, spec, out, interpret=interpret, progress=progress,
                    stopping=stopping)
    return record_solve(store, job, out, end)


@dataclass(frozen=True)
class SolveEnd:
    """How a job's solve ended, before anything is recorded in the campaign's store."""

    status: str  # a solve status, "error" (the solve raised) or "interrupted"
    error: str | None = None


def run_solve(task: Any, agent: str, seed: int, spec: CampaignSpec, out: Path, *, interpret: bool,
              progress: Callable[[Any], None] | None = None, stopping: Callable[[], bool] = lambda: False,
              agent_options: Mapping[str, Any] | None = None) -> SolveEnd:
    """Run (or continue, or find finished) the solve of one job in ``out``; records nothing outside
    ``out``, so it runs the same on the machine that holds the campaign's store and on one that does
    not. ``task``: a suite id, a path or a ``Task``; ``agent_options``: the agent's (default: the spec's)."""
    from kernellab.agents.solve import SolveOptions, solve
    from kernellab.evaluate.options import EvalOptions

    finished = _finished_solve(out)
    if finished is not None:
        return SolveEnd(finished)
    started = _started_solve(out)
    if out.exists() and not started:
        shutil.rmtree(out)  # killed before its solve recorded anything: start it afresh
    options = spec.options_for(agent) if agent_options is None else dict(agent_options)
    try:
        solve_options = SolveOptions(agent, out, options, spec.strategy, dict(spec.strategy_options), spec.budget,
                                     confine=spec.confine,
                                     eval_options=EvalOptions(device="cpu" if interpret else "cuda",
                                                              **spec.evaluation_overrides()),
                                     seed=seed, resume=started)
        result = solve(task, solve_options, progress=progress)
    except KeyboardInterrupt:
        return SolveEnd("interrupted")
    except Exception as exc:  # noqa: BLE001 — any failure of a solve is the job's, recorded
        if stopping():
            log.info("solve in %s ended by the stop (%s: %s)", out.name, type(exc).__name__, exc)
            return SolveEnd("interrupted")
        return SolveEnd("error", f"{type(exc).__name__}: {exc}")
    if result.interrupted or (stopping() and result.status not in SCORED):
        return SolveEnd("interrupted")
    return SolveEnd(result.status)


def record_solve(store: Store, job: JobRecord, out: Path, end: SolveEnd) -> JobOutcome:
    """Record a job's ended solve (its folder ``out`` under the campaign's ``jobs/``) in the campaign's
    store: copied and finished in one transaction, or, interrupted, put back to pending."""
    queue = JobQueue(store)
    if end.status == "interrupted":
        queue.requeue(job)
        return JobOutcome("interrupted", None)
    if end.status == "error":
        log.warning("job %s (%s) failed: %s", job.id, job.key, end.error)
        with store.transaction():
            _copy_solve(store, job, out)
            queue.finish(job, "failed", end.error)
        return JobOutcome("error", "failed", end.error)
    with store.transaction():
        _copy_solve(store, job, out)
        queue.finish(job, "done")
    return JobOutcome(end.status, "done")


def _started_solve(out: Path) -> bool:
    """Whether ``out`` holds a solve that recorded its job (a store created, then killed before the
    solve's first write, holds none and starts afresh)."""
    if not (out / DB_NAME).exists():
        return False
    try:
        with Store.open(out, create=False) as solved:
            return bool(solved.jobs())
    except StoreError:  # a store killed while being created: nothing to resume
        return False


def _finished_solve(out: Path) -> str | None:
    """The status of a solve in ``out`` that ran to its end (``result.json`` written, its job done)."""
    import json

    result, db = out / "result.json", out / DB_NAME
    if not result.exists() or not db.exists():
        return None
    status = json.loads(result.read_text()).get("status")
    if status not in SCORED:
        return None
    with Store.open(out, create=False) as solved:
        jobs = solved.jobs()
        return status if jobs and jobs[0].status == "done" else None


def _copy_solve(store: Store, job: JobRecord, out: Path) -> None:
    """Copy the solve's attempts (kernels, verdicts, usage, flags) and events into the campaign's job.
    Called inside the campaign store's transaction; a job with attempts already copied is left alone."""
    if not (out / DB_NAME).exists() or store.attempts(job):
        return
    with Store.open(out, create=False) as solved:
        jobs = solved.jobs()
        if not jobs:
            return
        for a in solved.attempts(jobs[0]):
            path = solved.kernel_path(a)
            source = path.read_text() if path is not None and path.exists() else None
            store.record_attempt(job, source, a.verdict, iteration=a.iteration, usage=a.usage, kept=a.kept,
                                 final=a.final, note=a.note)
        for e in solved.events(jobs[0]):
            store.record_event(job, e.kind, e.payload)
        store.record_event(job, "solve", {"dir": str(out.relative_to(store.run_dir))})
