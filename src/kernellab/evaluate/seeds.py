"""Seed offsets of the reference cases, in one place.

A case is built once per (config, dtype, seed) and kept by the session, so stages that draw the
same seed share it. The timing stage reads the checked case of its row (its tolerances and model)
but times the candidate on fresh values from a secret seed (``timing_slots``), never on these.
"""

from __future__ import annotations

TRIAL_STEP = 1000  # between the fresh input sets of one config (the sweep's trials)
SWEEP = 0
STABILITY = 7
EDGE = 11
BACKWARD = 23
HOLDOUT = 31


def trial(base_seed: int, offset: int, k: int) -> int:
    """The seed of the ``k``-th input set of a stage whose first set has ``base_seed + offset``."""
    return base_seed + offset + TRIAL_STEP * k
