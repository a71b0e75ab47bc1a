"""Which correctness calls are traced on a GPU: every stage and dtype, drawn from the evaluation seed."""

from __future__ import annotations

from kernellab.evaluate.trace_sampling import SAMPLED_SHARE, TRACED_WHOLE, traced_calls
from kernellab.evaluate.verdict import Stage

SAMPLED = (Stage.SHAPE_SWEEP, Stage.STABILITY, Stage.DETERMINISM)


def test_every_group_of_every_stage_has_a_traced_call():
    for seed in range(200):
        for stage in SAMPLED + tuple(TRACED_WHOLE):
            for count in (1, 2, 3, 5):
                picked = traced_calls(seed, stage, "M=4096,N=4096|bfloat16", count)
                assert picked and picked <= set(range(count))


def test_stages_with_few_calls_are_traced_whole():
    for stage in TRACED_WHOLE:
        assert traced_calls(0, stage, "g", 4) == {0, 1, 2, 3}
    assert {Stage.SMOKE, Stage.EDGE, Stage.BACKWARD, Stage.HOLDOUT} == TRACED_WHOLE


def test_the_draw_follows_the_seed_and_is_repeatable():
    draws = {seed: traced_calls(seed, Stage.SHAPE_SWEEP, "M=8|float32", 3) for seed in range(64)}
    assert all(traced_calls(seed, Stage.SHAPE_SWEEP, "M=8|float32", 3) == d for seed, d in draws.items())
    # every trial is traced under some seed and left out under another: no trial is predictable
    for trial in range(3):
        assert any(trial in d for d in draws.values()) and any(trial not in d for d in draws.values())


def test_each_untraced_call_is_traced_at_about_the_sampled_share():
    """Beyond the one call per group, a call is traced with probability SAMPLED_SHARE: over many seeds
    a later sweep trial (which a candidate using its own kernel only on the first call would fail)
    is traced about (1/3 + 2/3 * SAMPLED_SHARE) of the time."""
    seeds = range(3000)
    share = sum(2 in traced_calls(s, Stage.SHAPE_SWEEP, "c|d", 3) for s in seeds) / len(seeds)
    expected = 1 / 3 + 2 / 3 * SAMPLED_SHARE
    assert abs(share - expected) < 0.04


def test_groups_are_drawn_independently():
    """Knowing which call was traced in one dtype says nothing of another's."""
    differ = sum(traced_calls(seed, Stage.STABILITY, "c|float32", 5) != traced_calls(seed, Stage.STABILITY, "c|float16", 5)
                 for seed in range(50))
    assert differ > 25
