"""The verdict's headline speedup counts every timed row: a task's backward is part of its work."""

from __future__ import annotations

import pytest

from kernellab.evaluate.stages.performance import geomean_speedups
from kernellab.evaluate.verdict import Timing


def _row(phase: str, speedup: float) -> Timing:
    return Timing(config="N=1", dtype="float32", phase=phase, method="events", samples=10, candidate_us=10.0,
                  ci95_us=(9.0, 11.0), eager_us=10.0 * speedup, speedup_vs_eager=speedup)


def test_a_slow_backward_shows_in_the_headline():
    """Forward rows run without autograd: a candidate that saves its effort for them and is slow in
    the backward gets the geometric mean of both, not the forward's alone."""
    speedups = geomean_speedups([_row("forward", 4.0), _row("forward+backward", 0.25)])
    assert speedups["vs_eager"] == pytest.approx(1.0)
    assert geomean_speedups([_row("forward", 4.0)])["vs_eager"] == pytest.approx(4.0)
    assert speedups["vs_compile"] is None  # no compile timing: no ratio, not a zero
