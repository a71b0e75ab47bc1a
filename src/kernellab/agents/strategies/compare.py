"""Comparing two verdicts' speed, beyond the noise of their timings.

Both verdicts come from the same warm session, so their seen timings are of the same configs on the
same device. Per matched timing (config, dtype, phase) the candidate's speedup over the other kernel
is ``other_us / candidate_us``; its pessimistic bound within the two 95% confidence intervals is
``other_ci_low / candidate_ci_high``. Both are combined by a geometric mean over the matched timings,
as the verdict itself combines configs. Under the Triton interpreter nothing is timed: a comparison
then matches nothing and says so ("not timed"), and correctness alone decides.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from kernellab.evaluate.verdict import Timing, Verdict
from kernellab.means import geomean


@dataclass(frozen=True)
class Comparison:
    """How much faster ``candidate`` is than ``other`` (above 1: faster)."""

    matched: int  # timings present in both verdicts
    speedup: float | None  # geometric mean of the point estimates
    speedup_low: float | None  # geometric mean of the pessimistic bounds (CI low of other / CI high of candidate)

    @property
    def timed(self) -> bool:
        return self.matched > 0

    def beats(self, min_gain: float) -> bool:
        """Faster by more than ``min_gain`` (0.01 = 1%) even at the pessimistic end of the CIs."""
        return self.speedup_low is not None and self.speedup_low > 1.0 + min_gain


def _key(t: Timing) -> tuple[str, str, str]:
    return (t.config, t.dtype, t.phase)


def _positive(*xs: float | None) -> bool:
    return all(x is not None and math.isfinite(x) and x > 0 for x in xs)


def compare_timings(candidate: Verdict, other: Verdict) -> Comparison:
    """The candidate's speedup over ``other`` across the seen timings both have."""
    theirs = {_key(t): t for t in other.timings}
    points, lows = [], []
    for mine in candidate.timings:
        ref = theirs.get(_key(mine))
        if ref is None or not _positive(mine.candidate_us, ref.candidate_us):
            continue
        points.append(ref.candidate_us / mine.candidate_us)
        low_ref, high_mine = ref.ci95_us[0], mine.ci95_us[1]
        if not _positive(low_ref, high_mine):  # a degenerate interval: the point estimate is all there is
            low_ref, high_mine = ref.candidate_us, mine.candidate_us
        lows.append(min(low_ref, ref.candidate_us) / max(high_mine, mine.candidate_us))
    return Comparison(len(points), geomean(points), geomean(lows))


def speedup_vs(verdict: Verdict | None, reference: str = "eager") -> float | None:
    """The verdict's geometric-mean speedup vs ``eager``, ``compile`` or ``baseline`` (None: not timed)."""
    if verdict is None:
        return None
    value = verdict.speedup.get(f"vs_{reference}")
    return value if _positive(value) else None


def roofline_pct(verdict: Verdict | None) -> float | None:
    """Mean % of roofline over the verdict's forward seen timings (None: not timed or no formula)."""
    if verdict is None:
        return None
    values = [t.pct_of_roofline for t in verdict.timings if t.phase == "forward" and _positive(t.pct_of_roofline)]
    return sum(values) / len(values) if values else None


def is_faster(candidate: Verdict, best: Verdict) -> bool:
    """Point-estimate comparison of two correct kernels (best-of-n, the archive of evolve): the
    candidate is faster over the timings both have. False when nothing is timed."""
    c = compare_timings(candidate, best)
    return c.speedup is not None and c.speedup > 1.0


def fastest(verdicts: Sequence[Verdict | None]) -> tuple[int | None, str]:
    """Index of the fastest correct verdict and why: by geometric-mean time over the timings all
    correct ones share, else by speedup vs eager; untimed, the first correct one."""
    correct = [i for i, v in enumerate(verdicts) if v is not None and v.correct]
    if not correct:
        return None, "no correct kernel"
    if len(correct) == 1:
        return correct[0], "the only correct kernel"
    keys = set.intersection(*({_key(t) for t in verdicts[i].timings if _positive(t.candidate_us)} for i in correct))
    if keys:
        def mean_us(i: int) -> float:
            return geomean([t.candidate_us for t in verdicts[i].timings if _key(t) in keys])  # type: ignore[return-value]

        best = min(correct, key=lambda i: (mean_us(i), i))
        return best, (f"fastest of {len(correct)} correct kernels: geometric mean {mean_us(best):.2f} us over "
                      f"{len(keys)} shared timings")
    speeds = {i: speedup_vs(verdicts[i]) for i in correct}
    timed = [i for i in correct if speeds[i] is not None]
    if timed:
        best = max(timed, key=lambda i: (speeds[i], -i))
        return best, f"fastest of {len(correct)} correct kernels: x{speeds[best]:.2f} vs eager"
    return correct[0], f"not timed: the first of {len(correct)} correct kernels"
