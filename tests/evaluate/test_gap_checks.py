"""The host-noise-robust rules of the timing stage's outside-the-events checks: a gap between timed
calls over its limit counts, and a row is judged once more than a quarter of its calls had one; the
host clock is compared per call with the events in the median round, not the sum of all rounds."""

from __future__ import annotations

import math

from kernellab.evaluate.rounds import _aggregate
from kernellab.evaluate.stages.performance import GAP_SHARE, GapLedger, GapTimes
from kernellab.sandbox.round_clock import RoundTimes


def round_of(load_us: list[float], flush_us: float = 30.0, call_us: float = 100.0, wall_per_call_us: float = 150.0):
    calls = len(load_us)
    return RoundTimes(method="events", samples_us=[call_us] * calls, calls=calls,
                      wall_s=calls * wall_per_call_us * 1e-6, host_us=20.0, busy_us=call_us + flush_us,
                      flush_us=[flush_us] * calls, load_us=load_us)


def test_a_few_stretched_gaps_are_host_noise_and_a_gap_before_most_calls_is_work():
    alone = GapTimes(flush_us=30.0, load_us=10.0)  # limits: 140 and 80 µs
    noisy = GapLedger(alone)
    for _ in range(4):  # one loading in eight stretched by a descheduled host
        assert noisy.add(round_of([10.0] * 7 + [400.0])) is None
    hidden = GapLedger(alone)
    findings = [hidden.add(round_of([10.0, 150.0] * 4)) for _ in range(2)]  # work before half the calls
    assert findings[0] is not None and "loading of its values before 4 of 8 calls took up to 150.0 µs" in findings[0]
    assert 0.125 < GAP_SHARE < 0.5


def test_the_host_clock_check_reads_the_median_round():
    quiet = [round_of([10.0] * 8, wall_per_call_us=150.0) for _ in range(4)]
    stretched = round_of([10.0] * 8, wall_per_call_us=5000.0)  # the host was busy elsewhere
    times = _aggregate("events", [*quiet, stretched], [100.0] * 40, "ci", 8)
    assert times.wall_per_call_us > 1000  # all rounds summed: the busy host's round dominates
    assert math.isclose(times.median_round_wall_per_call_us, 150.0 - 30.0 - 10.0, rel_tol=1e-6)
    everywhere = [round_of([10.0] * 8, wall_per_call_us=5000.0) for _ in range(3)] + quiet[:2]
    assert _aggregate("events", everywhere, [100.0] * 40, "ci", 8).median_round_wall_per_call_us > 4000


def test_the_loading_of_large_inputs_is_not_call_time_on_the_host_clock():
    """A decode kernel of 550 µs reading a 1 GiB KV cache: loading each call's values takes ~900 µs of
    the host's time per call (an H100). The clock check compares the events with the wall time less
    that loading, as with the flushes; the gaps' check bounds what may run inside it."""
    big = [round_of([900.0] * 4, flush_us=30.0, call_us=550.0, wall_per_call_us=550.0 + 900.0 + 30.0 + 5.0)
           for _ in range(3)]
    times = _aggregate("events", big, [550.0] * 12, "ci", 4)
    assert math.isclose(times.median_round_wall_per_call_us, 555.0, rel_tol=1e-6)
    assert math.isclose(times.wall_per_call_us, 555.0, rel_tol=1e-6)
