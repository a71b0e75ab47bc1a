"""Scoring: formulas over final verdicts, and the results store of a run (ARCHITECTURE.md, "Scoring"
and "Runs, storage, scale"). Imports ``kernellab.evaluate.verdict`` only; never torch.

Formulas and field definitions: docs/scoring.md.
"""

from kernellab.score.from_store import (
    attempt_points_from_store,
    results_from_store,
    scoring_attempt,
)
from kernellab.score.generalization import (
    holdout_given_seen,
    holdout_speedup_delta,
    quadrants,
)
from kernellab.score.iterations import per_iteration
from kernellab.score.points import arena_points, gain_points, points_summary
from kernellab.score.records import AttemptPoint, Result, TaskKind
from kernellab.score.resources import cost_summary, memory_summary
from kernellab.score.speedup import (
    FAST_P_THRESHOLDS,
    compile_rate,
    correct_rate,
    fast_p,
    fast_p_curve,
    fast_p_table,
    speedup_means,
)
from kernellab.score.store import SchemaVersionError, Store, StoreError
from kernellab.score.store_records import (
    AttemptRecord,
    AttemptUsage,
    JobRecord,
    JobSpec,
    JobStatus,
    RunRecord,
)
from kernellab.score.summary import summarize

__all__ = [
    "FAST_P_THRESHOLDS", "AttemptPoint", "AttemptRecord", "AttemptUsage", "JobRecord", "JobSpec", "JobStatus", "Result",
    "RunRecord", "SchemaVersionError", "Store", "StoreError", "TaskKind", "arena_points",
    "attempt_points_from_store", "compile_rate", "correct_rate", "cost_summary", "fast_p", "fast_p_curve",
    "fast_p_table", "gain_points", "holdout_given_seen", "holdout_speedup_delta", "memory_summary",
    "per_iteration", "points_summary", "quadrants", "results_from_store", "scoring_attempt",
    "speedup_means", "summarize",
]
