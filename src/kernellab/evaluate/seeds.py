"""Seed offsets of the reference cases, in one place.

A case is built once per (config, dtype, seed) and kept by the session, so stages that draw the
same seed share it: the timing stage times the candidate on the very input sets the shape sweep,
the backward stage and the holdout stage already built and checked, instead of building new ones.
"""

from __future__ import annotations

TRIAL_STEP = 1000  # between the fresh input sets of one config (sweep trials, timing sets)
SWEEP = 0
STABILITY = 7
EDGE = 11
BACKWARD = 23
HOLDOUT = 31


def trial(base_seed: int, offset: int, k: int) -> int:
    """The seed of the ``k``-th input set of a stage whose first set has ``base_seed + offset``."""
    return base_seed + offset + TRIAL_STEP * k


def is_trial(base_seed: int, offset: int, seed: int) -> bool:
    """Whether ``seed`` is one of the input sets ``trial(base_seed, offset, k)`` draws (k ≥ 0)."""
    k, rest = divmod(seed - base_seed - offset, TRIAL_STEP)
    return k >= 0 and rest == 0
