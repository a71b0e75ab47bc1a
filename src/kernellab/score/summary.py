"""One JSON-ready summary of a set of results; the report layer renders it and adds nothing.

Shape (every number may be None where undefined; docs/scoring.md defines each field)::

    {"n_results", "n_scored", "n_unscored",
     "overall": block, "by_category": {name: block}, "by_kind": {kind: block}, "by_agent": {name: block},
     "fast_p_curve": {"vs_eager": [[p, value], ...], "vs_compile": [...]},
     "generalization": {...}, "cost": {...}, "memory": {...}, "points": {...},
     "per_iteration": [row, ...]}            # only when attempts are given

    block = {"n", "n_unscored", "compile_rate", "correct_rate",
             "fast_p": {"vs_eager": {"fast_0": ..}, "vs_compile": {..}, "vs_baseline": {..}},
             "speedup": {"vs_eager": {"n", "geomean", "mean"}, "vs_compile": .., "vs_baseline": ..},
             "pct_of_roofline_mean", "p_holdout_given_seen", "arena_points_mean", "gain_points_mean"}

``fast_p.vs_baseline`` and ``speedup.vs_baseline`` are over the kernel→kernel results of the block
only (a torch→kernel task has no baseline kernel to beat).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from kernellab.score.generalization import generalization_summary, holdout_given_seen
from kernellab.score.iterations import per_iteration
from kernellab.score.jsonable import json_ready
from kernellab.score.points import points_summary
from kernellab.score.records import AttemptPoint, Result
from kernellab.score.resources import cost_summary, memory_summary, roofline_summary
from kernellab.score.speedup import (
    compile_rate,
    correct_rate,
    fast_p_curve,
    fast_p_table,
    kernel_to_kernel,
    scored,
    speedup_means,
)


def group_by(results: Sequence[Result], key: Callable[[Result], str]) -> dict[str, list[Result]]:
    groups: dict[str, list[Result]] = defaultdict(list)
    for r in results:
        groups[key(r)].append(r)
    return dict(sorted(groups.items()))


def block(results: Sequence[Result]) -> dict[str, Any]:
    """The headline numbers of one group of results."""
    k2k = kernel_to_kernel(results)
    points = points_summary(results)
    return {
        "n": len(scored(results)), "n_unscored": len(results) - len(scored(results)),
        "compile_rate": compile_rate(results), "correct_rate": correct_rate(results),
        "fast_p": {"vs_eager": fast_p_table(results, "eager"), "vs_compile": fast_p_table(results, "compile"),
                   "vs_baseline": fast_p_table(k2k, "baseline")},
        "speedup": {"vs_eager": speedup_means(results, "eager"), "vs_compile": speedup_means(results, "compile"),
                    "vs_baseline": speedup_means(k2k, "baseline")},
        "pct_of_roofline_mean": roofline_summary(results)["pct_of_roofline_mean"],
        "p_holdout_given_seen": holdout_given_seen(results),
        "arena_points_mean": points["arena_mean"], "gain_points_mean": points["gain_mean"],
    }


def summarize(results: Sequence[Result], attempts: Sequence[AttemptPoint] | None = None) -> dict[str, Any]:
    """Everything the report shows about ``results`` (and, if given, the attempts behind them)."""
    summary: dict[str, Any] = {
        "n_results": len(results), "n_scored": len(scored(results)),
        "n_unscored": len(results) - len(scored(results)),
        "overall": block(results),
        "by_category": {k: block(v) for k, v in group_by(results, lambda r: r.category).items()},
        "by_kind": {k: block(v) for k, v in group_by(results, lambda r: r.kind.value).items()},
        "by_agent": {k: block(v) for k, v in group_by(results, lambda r: r.agent).items()},
        "fast_p_curve": {f"vs_{vs}": [[p, v] for p, v in fast_p_curve(results, vs)]
                         for vs in ("eager", "compile")},
        "generalization": generalization_summary(results),
        "cost": cost_summary(results),
        "memory": memory_summary(results),
        "points": points_summary(results),
    }
    if attempts is not None:
        summary["per_iteration"] = per_iteration(attempts)
    return json_ready(summary)

