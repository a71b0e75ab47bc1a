"""Build scoring records from a run's results store.

Which attempt scores a job, in order of preference:

1. the last attempt marked ``final`` — the re-evaluation of the agent's last ``kernel.py`` from
   outside its workspace, against pristine task files (ARCHITECTURE.md, "Agents");
2. otherwise the last attempt marked ``kept`` (the incumbent of a keep/revert or best-of-n search);
3. otherwise the best attempt by what the agent could see: correct first, then the higher seen
   speedup vs eager, then compiled, then the later iteration (holdout results never choose).

A job that finished with no attempt, or whose scoring attempt has no verdict, is a failure with
status ``no_candidate``. Cost fields add up every attempt of the job.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from kernellab.evaluate.verdict import Verdict
from kernellab.score.records import NO_CANDIDATE, AttemptPoint, Result
from kernellab.score.stats import finite, geomean, mean, positive, ratio
from kernellab.score.store import Store
from kernellab.score.store_records import AttemptRecord, JobRecord

def scoring_attempt(attempts: Sequence[AttemptRecord]) -> AttemptRecord | None:
    """The attempt whose verdict scores the job (see the module docstring)."""
    if not attempts:
        return None
    ordered = sorted(attempts, key=lambda a: (a.iteration, a.id))
    for flag in ("final", "kept"):
        marked = [a for a in ordered if getattr(a, flag)]
        if marked:
            return marked[-1]

    def rank(a: AttemptRecord) -> tuple:
        v = a.verdict
        if v is None:
            return (False, False, 0.0, False, a.iteration, a.id)
        speedup = positive([v.speedup_vs_eager])
        return (True, v.correct, speedup[0] if speedup else 0.0, v.compiled, a.iteration, a.id)

    return max(ordered, key=rank)


def result_for_job(job: JobRecord, attempts: Sequence[AttemptRecord]) -> Result:
    chosen = scoring_attempt(attempts)
    usage = [a.usage for a in attempts]
    cost = {
        "wall_s": _sum([u.wall_s for u in usage]),
        "tokens_in": _int(_sum([u.tokens_in for u in usage])),
        "tokens_out": _int(_sum([u.tokens_out for u in usage])),
        "steps": _int(_sum([u.agent_steps for u in usage])),
        "cost_usd": _sum([u.cost_usd for u in usage]),
    }
    base = {"task_id": job.task_id, "agent": job.agent, "seed": job.seed, "strategy": job.strategy,
            "category": job.category, "kind": job.kind, "attempts": len(attempts), **cost}
    if chosen is None or chosen.verdict is None:
        return Result(**base, status=NO_CANDIDATE)
    return Result(**base, **verdict_fields(chosen.verdict))


def verdict_fields(v: Verdict) -> dict[str, Any]:
    """The ``Result`` fields a verdict determines: the one place a verdict's fields become a result's
    (``report.model.TaskRow.from_result`` takes them on by name)."""
    forward = v.forward_timings
    peaks = [t.peak_mem_bytes for t in v.timings if t.peak_mem_bytes is not None]
    return {
        "status": v.status.value,
        "compiled": v.compiled,
        "correct": v.correct,
        "speedup_vs_eager": v.speedup.get("vs_eager"),
        "speedup_vs_compile": v.speedup.get("vs_compile"),
        "speedup_vs_baseline": v.speedup.get("vs_baseline"),
        "holdout_correct": v.holdout.correct,
        "holdout_speedup": v.holdout.speedup.get("vs_eager"),
        "seen_speedups": tuple(finite(t.speedup_vs_eager for t in forward)),
        "pct_of_roofline": mean(t.pct_of_roofline for t in forward),
        "peak_mem_bytes": max(peaks) if peaks else None,
        "peak_mem_ratio": geomean([ratio(t.peak_mem_bytes, t.eager_peak_mem_bytes) for t in forward]),
    }


def results_from_store(store: Store, run_id: int | None = None, *, include_unfinished: bool = False) -> list[Result]:
    """One ``Result`` per finished job (``done`` or ``failed``) of ``run_id`` (default: every run)."""
    with store.snapshot():
        jobs = [j for j in store.jobs(run_id) if include_unfinished or j.status.finished]
        by_job = _attempts_by_job(store, run_id)
    return [result_for_job(j, by_job.get(j.id, [])) for j in jobs]


def attempt_points_from_store(store: Store, run_id: int | None = None) -> list[AttemptPoint]:
    """One ``AttemptPoint`` per search attempt (attempts marked ``final`` are re-evaluations, not
    iterations, and are left out)."""
    with store.snapshot():
        jobs = {j.id: j for j in store.jobs(run_id)}
        attempts = store.attempts(run_id=run_id)
    points = []
    for a in attempts:
        if a.final:
            continue
        v = a.verdict
        points.append(AttemptPoint(
            job=jobs[a.job_id].key, iteration=a.iteration, compiled=bool(v and v.compiled),
            correct=bool(v and v.correct), speedup=v.speedup_vs_eager if v else None,
            status=v.status.value if v else NO_CANDIDATE))
    return points


def _attempts_by_job(store: Store, run_id: int | None) -> dict[int, list[AttemptRecord]]:
    by_job: dict[int, list[AttemptRecord]] = defaultdict(list)
    for a in store.attempts(run_id=run_id):
        by_job[a.job_id].append(a)
    return by_job


def _sum(values: list[float | None]) -> float | None:
    xs = finite(values)
    return sum(xs) if xs else None


def _int(value: float | None) -> int | None:
    return None if value is None else round(value)
