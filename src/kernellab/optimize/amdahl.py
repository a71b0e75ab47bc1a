"""Amdahl's law: what speeding up a part of the time does for the whole."""

from __future__ import annotations

import math

FACTORS = (1.5, 2.0, math.inf)


def whole_speedup(share: float, factor: float) -> float:
    """Whole-model speedup when a part taking ``share`` of the time gets ``factor`` times faster."""
    share = min(max(share, 0.0), 1.0)
    rest = 1.0 - share
    part = 0.0 if math.isinf(factor) else share / factor
    return 1.0 / (rest + part) if rest + part > 0 else math.inf


def projected(shares_and_factors: list[tuple[float, float]]) -> float:
    """Whole-model speedup of several disjoint parts, each with its own factor."""
    left = 1.0 - sum(s for s, _ in shares_and_factors)
    rest = sum(s / f for s, f in shares_and_factors if f > 0)
    return 1.0 / (max(left, 0.0) + rest) if max(left, 0.0) + rest > 0 else math.inf
