"""Small, total statistics: every function returns None where the quantity is undefined.

Inputs may hold None, NaN or infinities (an untimed result, a division by a zero time); these are
dropped, never raised on, so a report over a half-finished run still renders.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from kernellab.means import finite, geomean, positive  # noqa: F401 - scoring's statistics, one place


def mean(values: Iterable[float | None]) -> float | None:
    xs = finite(values)
    return sum(xs) / len(xs) if xs else None


def fraction(count: int, total: int) -> float | None:
    return count / total if total else None


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    if numerator is None or denominator is None or denominator == 0:
        return None
    value = numerator / denominator
    return value if math.isfinite(value) else None


def total(values: Iterable[float | None]) -> float | None:
    """Sum of the finite values; None when there are none (unknown is not zero)."""
    xs = finite(values)
    return sum(xs) if xs else None
