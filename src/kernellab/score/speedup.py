"""Rates, ``fast_p`` and mean speedups over a set of results (ARCHITECTURE.md, "Scoring").

Every rate is over the *scored* results (see ``records.UNSCORED_STATUSES``); a failed or missing
candidate counts in the denominator. Functions return None where the quantity is undefined (no
scored result, nothing timed) rather than 0, so "not measured" never reads as "measured zero".
"""

from __future__ import annotations

from collections.abc import Sequence

from kernellab.score.records import Result, TaskKind
from kernellab.score.stats import fraction, geomean, mean, positive

# The thresholds ARCHITECTURE.md names; fast_0 is the share correct and timed, fast_1 the share that
# beats the reference at all.
FAST_P_THRESHOLDS = (0.0, 1.0, 1.1, 1.5, 2.0)
# Default grid of the fast_p curve: 0 to 4 in steps of 0.1 covers what published agents reach on
# single operators; pass a grid for anything else.
FAST_P_GRID = tuple(round(0.1 * i, 1) for i in range(41))


def scored(results: Sequence[Result]) -> list[Result]:
    return [r for r in results if r.scored]


def compile_rate(results: Sequence[Result]) -> float | None:
    rs = scored(results)
    return fraction(sum(r.compiled for r in rs), len(rs))


def correct_rate(results: Sequence[Result]) -> float | None:
    rs = scored(results)
    return fraction(sum(r.correct for r in rs), len(rs))


def fast_p(results: Sequence[Result], p: float, vs: str = "eager") -> float | None:
    """Fraction of all scored results that are correct AND have a speedup strictly greater than p.

    The denominator is every scored result (KernelBench's definition), so fast_p never exceeds the
    correctness rate. A correct result without a speedup is not fast for any p. None when there is
    no scored result, or when there are correct results and not one of them was timed (an
    interpreter run): a fast_p of 0 would then claim a measurement that was never made. When no
    result is correct, fast_p is 0 whether or not anything was timed.
    """
    rs = scored(results)
    correct = [r for r in rs if r.correct]
    if not rs or (correct and all(r.speedup(vs) is None for r in correct)):
        return None
    fast = sum(1 for r in rs if r.correct and (s := r.speedup(vs)) is not None and s > p)
    return fast / len(rs)


def fast_p_table(results: Sequence[Result], vs: str = "eager",
                 thresholds: Sequence[float] = FAST_P_THRESHOLDS) -> dict[str, float | None]:
    """``{"fast_0": ..., "fast_1": ..., "fast_1.1": ...}`` for the given thresholds."""
    return {f"fast_{p:g}": fast_p(results, p, vs) for p in thresholds}


def fast_p_curve(results: Sequence[Result], vs: str = "eager",
                 grid: Sequence[float] = FAST_P_GRID) -> list[tuple[float, float | None]]:
    """fast_p over a grid of p, for plotting (non-increasing in p)."""
    return [(p, fast_p(results, p, vs)) for p in grid]


def correct_speedups(results: Sequence[Result], vs: str = "eager") -> list[float]:
    """Speedups of the scored, correct results that were timed (a wrong kernel's speed means nothing)."""
    return positive(r.speedup(vs) for r in scored(results) if r.correct)


def speedup_means(results: Sequence[Result], vs: str = "eager") -> dict[str, float | int | None]:
    """Geometric and arithmetic mean speedup over the correct, timed results.

    The geometric mean is the headline. Speedups are ratios: the geometric mean treats 2× and 0.5×
    as cancelling (the arithmetic mean calls their average 1.25×), it is not dominated by one
    outlier kernel on one easy task, it does not depend on which side of the ratio is the numerator,
    and it is how the verdict itself aggregates configs. The arithmetic mean is reported because
    published tables use it.
    """
    xs = correct_speedups(results, vs)
    return {"n": len(xs), "geomean": geomean(xs), "mean": mean(xs)}


def kernel_to_kernel(results: Sequence[Result]) -> list[Result]:
    return [r for r in results if r.kind is TaskKind.KERNEL_TO_KERNEL]
