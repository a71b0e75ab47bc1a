"""Generalization to held-out configurations (AgentKernelArena's "unseen configuration" protocol).

A result's ``correct`` covers seen, edge and small configs; ``holdout_correct`` covers configs no
agent ever saw (None when the task has none, or when the gated pipeline stopped at a failed seen
stage before reaching the holdout stage — in kernellab that is the usual case for a seen-wrong
kernel, so the "seen wrong" quadrants are mostly ``unknown``).
"""

from __future__ import annotations

from collections.abc import Sequence

from kernellab.score.records import Result
from kernellab.score.speedup import scored
from kernellab.score.stats import fraction, geomean, mean, positive, ratio

QUADRANTS = (
    "seen_correct_holdout_correct",
    "seen_correct_holdout_wrong",
    "seen_wrong_holdout_correct",
    "seen_wrong_holdout_wrong",
    "seen_correct_holdout_unknown",
    "seen_wrong_holdout_unknown",
)


def holdout_given_seen(results: Sequence[Result]) -> float | None:
    """P(holdout correct | seen correct), over scored seen-correct results that have a holdout verdict."""
    known = [r for r in scored(results) if r.correct and r.holdout_correct is not None]
    return fraction(sum(1 for r in known if r.holdout_correct), len(known))


def holdout_speedup_delta(results: Sequence[Result]) -> dict[str, float | int | None]:
    """How speed carries over to unseen configs, over results correct on both seen and holdout configs
    and timed on both (speedups vs eager).

    ``mean_delta`` = mean(holdout − seen); ``geomean_ratio`` = geomean(holdout) / geomean(seen) over the
    same results (below 1: the kernel was tuned to the shapes it saw).
    """
    pairs = [(r.speedup_vs_eager, r.holdout_speedup) for r in scored(results)
             if r.correct and r.holdout_correct and positive([r.speedup_vs_eager])
             and positive([r.holdout_speedup])]
    seen = [s for s, _ in pairs]
    held = [h for _, h in pairs]
    return {"n": len(pairs), "mean_delta": mean(h - s for s, h in pairs),
            "geomean_ratio": ratio(geomean(held), geomean(seen))}


def quadrant_of(result: Result) -> str:
    seen = "seen_correct" if result.correct else "seen_wrong"
    if result.holdout_correct is None:
        return f"{seen}_holdout_unknown"
    return f"{seen}_holdout_{'correct' if result.holdout_correct else 'wrong'}"


def quadrants(results: Sequence[Result]) -> dict[str, dict[str, float | int | None]]:
    """The four AgentKernelArena quadrants plus the two ``unknown`` ones, as counts and fractions of
    all scored results (the six fractions add up to 1)."""
    rs = scored(results)
    counts = dict.fromkeys(QUADRANTS, 0)
    for r in rs:
        counts[quadrant_of(r)] += 1
    return {q: {"count": n, "fraction": fraction(n, len(rs))} for q, n in counts.items()}


def generalization_summary(results: Sequence[Result]) -> dict:
    return {"p_holdout_given_seen": holdout_given_seen(results),
            "holdout_speedup_delta": holdout_speedup_delta(results),
            "quadrants": quadrants(results)}
