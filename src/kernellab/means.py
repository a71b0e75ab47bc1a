"""The one geometric mean (speedups of a verdict, of a strategy's comparison, of a report).

Inputs may hold None, NaN, infinities or non-positive values (an untimed row, a division by a zero
time): they are dropped, never raised on, and the mean of nothing is None. The module imports
nothing of kernellab, so every layer may use it (``.importlinter``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable


def finite(values: Iterable[float | None]) -> list[float]:
    """The finite numbers among ``values`` (None, NaN and ±inf removed)."""
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def positive(values: Iterable[float | None]) -> list[float]:
    """The finite, strictly positive numbers among ``values`` (what a ratio's logarithm needs)."""
    return [v for v in finite(values) if v > 0]


def geomean(values: Iterable[float | None]) -> float | None:
    """Geometric mean of the positive finite values; None when there are none."""
    xs = positive(values)
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None
