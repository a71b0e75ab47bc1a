"""Scoring formulas against values computed by hand (the arithmetic is in the comments).

The fixture set, six results (R6 is unscored: an interpreter gap is not the agent's failure):

    id  category kind            compiled correct  eager compile baseline  holdout  h.speedup
    R1  norm     torch->kernel   yes      yes      2.0   1.25    -         correct  1.6
    R2  norm     torch->kernel   yes      yes      0.5   0.4     -         wrong    -
    R3  gemm     kernel->kernel  yes      yes      4.0   2.0     1.0       correct  2.0
    R4  gemm     kernel->kernel  yes      no       -     -       -         -        -
    R5  gemm     torch->kernel   no       no       -     -       -         -        -
    R6  norm     torch->kernel   unsupported_in_interpreter (unscored)
"""

from __future__ import annotations

import json
import math

import pytest

from kernellab.score import (
    AttemptPoint,
    Result,
    TaskKind,
    arena_points,
    compile_rate,
    correct_rate,
    cost_summary,
    fast_p,
    fast_p_curve,
    fast_p_table,
    gain_points,
    holdout_given_seen,
    holdout_speedup_delta,
    memory_summary,
    per_iteration,
    points_summary,
    quadrants,
    speedup_means,
    summarize,
)
from kernellab.score.points import UNCHANGED_KERNEL_POINTS
from kernellab.score.resources import roofline_summary
from kernellab.score.stats import fraction, geomean, mean, ratio, total

T2K, K2K = TaskKind.TORCH_TO_KERNEL, TaskKind.KERNEL_TO_KERNEL

R1 = Result("t1", category="norm", kind=T2K, status="passed", compiled=True, correct=True,
            speedup_vs_eager=2.0, speedup_vs_compile=1.25, holdout_correct=True, holdout_speedup=1.6,
            pct_of_roofline=50.0, peak_mem_bytes=1000, peak_mem_ratio=1.0,
            wall_s=10.0, tokens_in=100, tokens_out=50, steps=3, cost_usd=0.5)
R2 = Result("t2", category="norm", kind=T2K, status="passed", compiled=True, correct=True,
            speedup_vs_eager=0.5, speedup_vs_compile=0.4, holdout_correct=False,
            pct_of_roofline=10.0, wall_s=20.0, tokens_in=200, tokens_out=100, steps=5, cost_usd=1.0)
R3 = Result("t3", category="gemm", kind=K2K, status="passed", compiled=True, correct=True,
            speedup_vs_eager=4.0, speedup_vs_compile=2.0, speedup_vs_baseline=1.0, holdout_correct=True,
            holdout_speedup=2.0, pct_of_roofline=90.0, peak_mem_bytes=4000, peak_mem_ratio=4.0)
R4 = Result("t4", category="gemm", kind=K2K, status="failed", compiled=True, correct=False,
            pct_of_roofline=99.0, peak_mem_bytes=9999, peak_mem_ratio=9.0, wall_s=30.0, steps=7, cost_usd=1.5)
R5 = Result("t5", category="gemm", kind=T2K, status="failed")
R6 = Result("t6", category="norm", kind=T2K, status="unsupported_in_interpreter", compiled=True,
            wall_s=5.0, steps=1, cost_usd=0.25)
ALL = [R1, R2, R3, R4, R5, R6]


# -- rates, fast_p, means --------------------------------------------------------------------------------


def test_rates_are_over_scored_results():
    # scored: R1..R5 (5); compiled: R1, R2, R3, R4 -> 4/5; correct: R1, R2, R3 -> 3/5
    assert compile_rate(ALL) == pytest.approx(0.8)
    assert correct_rate(ALL) == pytest.approx(0.6)


@pytest.mark.parametrize("vs, expected", [
    # correct speedups vs eager 2.0, 0.5, 4.0 over 5 scored results; "> p" is strict (2.0 is not > 2)
    ("eager", {"fast_0": 3 / 5, "fast_1": 2 / 5, "fast_1.1": 2 / 5, "fast_1.5": 2 / 5, "fast_2": 1 / 5}),
    # vs compile 1.25, 0.4, 2.0
    ("compile", {"fast_0": 3 / 5, "fast_1": 2 / 5, "fast_1.1": 2 / 5, "fast_1.5": 1 / 5, "fast_2": 0.0}),
])
def test_fast_p_table(vs, expected):
    assert fast_p_table(ALL, vs) == pytest.approx(expected)


def test_fast_p_vs_baseline_on_kernel_to_kernel_tasks():
    k2k = [R3, R4]
    # R3 correct with 1.0 vs baseline, R4 wrong: fast_0 = 1/2; 1.0 is not > 1.0: fast_1 = 0
    assert fast_p(k2k, 0.0, "baseline") == pytest.approx(0.5)
    assert fast_p(k2k, 1.0, "baseline") == 0.0


def test_fast_p_curve_is_non_increasing_and_ends_at_zero():
    curve = fast_p_curve(ALL, "eager", grid=[0.0, 0.5, 1.9, 2.0, 3.9, 4.0])
    # > 0: 3/5; > 0.5: 2.0, 4.0 -> 2/5; > 1.9: 2/5; > 2.0: 1/5; > 3.9: 1/5; > 4.0: 0
    assert curve == [(0.0, 0.6), (0.5, 0.4), (1.9, 0.4), (2.0, 0.2), (3.9, 0.2), (4.0, 0.0)]


def test_speedup_means_geometric_and_arithmetic():
    eager = speedup_means(ALL, "eager")
    # geomean(2, 0.5, 4) = (2 * 0.5 * 4) ** (1/3) = 4 ** (1/3) = 1.5874; mean = 6.5 / 3 = 2.1667
    assert eager == {"n": 3, "geomean": pytest.approx(4 ** (1 / 3)), "mean": pytest.approx(6.5 / 3)}
    compiled = speedup_means(ALL, "compile")
    # geomean(1.25, 0.4, 2.0) = 1.0 ** (1/3) = 1; mean = 3.65 / 3 = 1.21667
    assert compiled["geomean"] == pytest.approx(1.0)
    assert compiled["mean"] == pytest.approx(3.65 / 3)


def test_geometric_mean_treats_2x_and_half_as_cancelling():
    rs = [Result("a", compiled=True, correct=True, speedup_vs_eager=2.0),
          Result("b", compiled=True, correct=True, speedup_vs_eager=0.5)]
    means = speedup_means(rs)
    assert means["geomean"] == pytest.approx(1.0)  # sqrt(2 * 0.5) = 1
    assert means["mean"] == pytest.approx(1.25)  # (2 + 0.5) / 2


def test_speed_of_a_wrong_kernel_is_ignored():
    fast_but_wrong = Result("w", compiled=True, correct=False, speedup_vs_eager=100.0)
    right = Result("r", compiled=True, correct=True, speedup_vs_eager=1.5)
    assert speedup_means([fast_but_wrong, right])["geomean"] == pytest.approx(1.5)
    assert fast_p([fast_but_wrong, right], 2.0) == 0.0  # only the wrong one is > 2


# -- generalization ---------------------------------------------------------------------------------------


def test_holdout_given_seen():
    # seen correct with a holdout verdict: R1 (yes), R2 (no), R3 (yes) -> 2/3
    assert holdout_given_seen(ALL) == pytest.approx(2 / 3)


def test_holdout_speedup_delta():
    d = holdout_speedup_delta(ALL)
    # pairs (seen, holdout): R1 (2.0, 1.6), R3 (4.0, 2.0); R2's holdout is wrong, so not a pair
    # mean delta = ((1.6 - 2.0) + (2.0 - 4.0)) / 2 = (-0.4 - 2.0) / 2 = -1.2
    # geomean ratio = sqrt(1.6 * 2.0) / sqrt(2.0 * 4.0) = sqrt(3.2 / 8) = sqrt(0.4) = 0.63246
    assert d["n"] == 2
    assert d["mean_delta"] == pytest.approx(-1.2)
    assert d["geomean_ratio"] == pytest.approx(math.sqrt(0.4))


def test_quadrants_counts_and_fractions():
    q = quadrants(ALL)
    # R1, R3: seen & holdout correct; R2: seen correct, holdout wrong; R4, R5: seen wrong, no holdout
    # verdict (the pipeline stopped first). Fractions over the 5 scored results.
    assert {k: v["count"] for k, v in q.items()} == {
        "seen_correct_holdout_correct": 2, "seen_correct_holdout_wrong": 1,
        "seen_wrong_holdout_correct": 0, "seen_wrong_holdout_wrong": 0,
        "seen_correct_holdout_unknown": 0, "seen_wrong_holdout_unknown": 2}
    assert q["seen_correct_holdout_correct"]["fraction"] == pytest.approx(0.4)
    assert q["seen_correct_holdout_wrong"]["fraction"] == pytest.approx(0.2)
    assert sum(v["fraction"] for v in q.values()) == pytest.approx(1.0)


def test_all_four_arena_quadrants():
    rs = [Result("a", compiled=True, correct=True, holdout_correct=True),
          Result("b", compiled=True, correct=True, holdout_correct=False),
          Result("c", compiled=True, correct=False, holdout_correct=True),
          Result("d", compiled=True, correct=False, holdout_correct=False)]
    q = quadrants(rs)
    for name in ("seen_correct_holdout_correct", "seen_correct_holdout_wrong",
                 "seen_wrong_holdout_correct", "seen_wrong_holdout_wrong"):
        assert q[name] == {"count": 1, "fraction": 0.25}


# -- points -----------------------------------------------------------------------------------------------


def test_arena_points_per_result():
    assert arena_points(R1) == pytest.approx(20 + 100 + 100 * 2.0)  # torch->kernel: S vs eager = 2.0
    assert arena_points(R2) == pytest.approx(20 + 100 + 100 * 0.5)  # 170: slower than eager still scores
    assert arena_points(R3) == pytest.approx(20 + 100 + 100 * 1.0)  # kernel->kernel: S vs baseline = 1.0
    assert arena_points(R4) == 20.0  # compiled, wrong
    assert arena_points(R5) == 0.0  # did not compile


def test_unchanged_baseline_kernel_earns_220_arena_points_and_no_gain():
    unchanged = Result("k", kind=K2K, compiled=True, correct=True, speedup_vs_eager=3.0, speedup_vs_baseline=1.0)
    # S is vs the kernel the agent was given (1.0), not vs eager (3.0, which would give 420)
    assert arena_points(unchanged) == UNCHANGED_KERNEL_POINTS == 220.0
    assert gain_points(unchanged) == 0.0


def test_gain_points():
    assert gain_points(R1) == pytest.approx(100 * (2.0 - 1))  # 100
    assert gain_points(R2) == 0.0  # max(0, 0.5 - 1) = 0: a slowdown gains nothing
    assert gain_points(R4) == 0.0


def test_points_without_timings_stop_at_120():
    untimed = Result("u", compiled=True, correct=True)
    assert arena_points(untimed) == 120.0
    assert gain_points(untimed) == 0.0
    assert arena_points(Result("n", compiled=True, correct=True, speedup_vs_eager=float("nan"))) == 120.0


def test_points_summary():
    p = points_summary(ALL)
    # arena: 320 + 170 + 220 + 20 + 0 = 730 over 5 scored -> mean 146; gain: 100 -> mean 20
    assert p["n"] == 5
    assert p["arena_total"] == pytest.approx(730.0)
    assert p["arena_mean"] == pytest.approx(146.0)
    assert p["gain_total"] == pytest.approx(100.0)
    assert p["gain_mean"] == pytest.approx(20.0)


# -- cost, memory, roofline -------------------------------------------------------------------------------


def test_cost_summary():
    c = cost_summary(ALL)
    # wall: 10 + 20 + 30 + 5 (R6 counts: the agent spent it) = 65 over 4 known -> mean 16.25
    assert c["wall_s"] == {"total": pytest.approx(65.0), "mean": pytest.approx(16.25)}
    # tokens: R1 150, R2 300 -> 450, mean 225; in: 300 (mean 150); out: 150 (mean 75)
    assert c["tokens"] == {"total": 450, "mean": 225}
    assert c["tokens_in"] == {"total": 300, "mean": 150}
    assert c["tokens_out"] == {"total": 150, "mean": 75}
    # steps: 3 + 5 + 7 + 1 = 16, mean 4; money: 0.5 + 1.0 + 1.5 + 0.25 = 3.25, mean 0.8125
    assert c["steps"] == {"total": 16, "mean": 4}
    assert c["cost_usd"] == {"total": pytest.approx(3.25), "mean": pytest.approx(0.8125)}
    # per correct result (3): 3.25 / 3 and 65 / 3
    assert c["cost_usd_per_correct"] == pytest.approx(3.25 / 3)
    assert c["wall_s_per_correct"] == pytest.approx(65 / 3)


def test_memory_and_roofline_over_correct_results():
    m = memory_summary(ALL)
    # correct ratios: R1 1.0, R3 4.0 (R4's 9.0 is wrong, ignored): geomean sqrt(4) = 2, max 4
    assert m == {"n": 2, "peak_mem_ratio_geomean": pytest.approx(2.0), "peak_mem_ratio_max": 4.0,
                 "peak_mem_bytes_max": 4000}
    # roofline: (50 + 10 + 90) / 3 = 50 (R4's 99 is wrong, ignored)
    assert roofline_summary(ALL) == {"n": 3, "pct_of_roofline_mean": pytest.approx(50.0)}


# -- per iteration ----------------------------------------------------------------------------------------


def test_per_iteration_curves():
    points = [
        AttemptPoint("A", 1, compiled=False, correct=False),
        AttemptPoint("A", 2, compiled=True, correct=False),
        AttemptPoint("A", 3, compiled=True, correct=True, speedup=1.5),
        AttemptPoint("B", 1, compiled=True, correct=True, speedup=2.0),
        AttemptPoint("B", 2, compiled=True, correct=True, speedup=1.0),  # worse: best stays 2.0
        AttemptPoint("C", 1, compiled=True, correct=False),
        AttemptPoint("C", 2, compiled=False, correct=False, status="needs_gpu"),  # unscored
        AttemptPoint("C", 3, compiled=True, correct=True, speedup=None),  # correct, untimed
    ]
    rows = per_iteration(points)
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    # it 1: A, B, C; compiled B, C -> 2/3; correct B -> 1/3; solved {B} of 3 jobs; best {B: 2.0}
    assert rows[0] == {"iteration": 1, "attempts": 3, "compile_rate": pytest.approx(2 / 3),
                       "correct_rate": pytest.approx(1 / 3), "solved_so_far": pytest.approx(1 / 3),
                       "best_speedup_geomean": pytest.approx(2.0), "jobs_with_speedup": 1}
    # it 2: A, B scored (C unscored); both compiled; B correct -> 1/2; best B = max(2.0, 1.0) = 2.0
    assert rows[1]["attempts"] == 2
    assert rows[1]["compile_rate"] == 1.0
    assert rows[1]["correct_rate"] == 0.5
    assert rows[1]["best_speedup_geomean"] == pytest.approx(2.0)
    # it 3: A (1.5), C (untimed) both correct; solved {A, B, C} = 1; best A 1.5, B 2.0 -> sqrt(3)
    assert rows[2]["correct_rate"] == 1.0
    assert rows[2]["solved_so_far"] == 1.0
    assert rows[2]["best_speedup_geomean"] == pytest.approx(math.sqrt(3.0))
    assert rows[2]["jobs_with_speedup"] == 2


def test_per_iteration_empty():
    assert per_iteration([]) == []


# -- edge cases -------------------------------------------------------------------------------------------


def test_empty_inputs_are_undefined_not_zero():
    assert compile_rate([]) is None
    assert correct_rate([]) is None
    assert fast_p([], 1.0) is None
    assert speedup_means([]) == {"n": 0, "geomean": None, "mean": None}
    assert holdout_given_seen([]) is None
    assert holdout_speedup_delta([]) == {"n": 0, "mean_delta": None, "geomean_ratio": None}
    assert all(v == {"count": 0, "fraction": None} for v in quadrants([]).values())
    assert points_summary([])["arena_mean"] is None
    assert cost_summary([])["cost_usd"] == {"total": None, "mean": None}
    assert cost_summary([])["cost_usd_per_correct"] is None


def test_all_failed():
    rs = [Result("a", status="failed"), Result("b", compiled=True, status="failed")]
    assert compile_rate(rs) == 0.5
    assert correct_rate(rs) == 0.0
    assert fast_p(rs, 0.0) == 0.0  # nothing correct: nothing is fast, measured or not
    assert speedup_means(rs)["geomean"] is None
    assert holdout_given_seen(rs) is None  # no seen-correct result to condition on
    assert cost_summary(rs)["cost_usd_per_correct"] is None  # no division by zero correct results


def test_correct_but_untimed_gives_undefined_fast_p():
    # an interpreter run: correct kernels, no timings. fast_p would otherwise read as "0% fast".
    rs = [Result("a", compiled=True, correct=True), Result("b", status="failed")]
    assert fast_p(rs, 0.0) is None
    assert fast_p_table(rs)["fast_1"] is None
    # one timed correct result makes it defined; the untimed one is simply not fast
    rs.append(Result("c", compiled=True, correct=True, speedup_vs_eager=1.5))
    assert fast_p(rs, 1.0) == pytest.approx(1 / 3)


def test_only_unscored_results():
    rs = [R6]
    assert compile_rate(rs) is None
    assert fast_p(rs, 1.0) is None
    s = summarize(rs)
    assert s["n_results"] == 1 and s["n_scored"] == 0 and s["n_unscored"] == 1


def test_stats_helpers():
    assert geomean([None, float("nan"), 0.0, -1.0, 4.0, 1.0]) == pytest.approx(2.0)  # sqrt(4 * 1)
    assert geomean([]) is None
    assert mean([None, float("inf"), 1.0, 3.0]) == 2.0
    assert total([None]) is None
    assert fraction(1, 0) is None
    assert ratio(1.0, 0.0) is None and ratio(None, 2.0) is None and ratio(3.0, 2.0) == 1.5


def test_result_validation():
    with pytest.raises(ValueError, match="correct without"):
        Result("x", compiled=False, correct=True)
    with pytest.raises(ValueError):
        Result("x").speedup("flops")
    assert Result("x", kind="kernel->kernel").kind is K2K
    assert Result("x", tokens_in=5).tokens == 5 and Result("x").tokens is None


# -- the summary ------------------------------------------------------------------------------------------


def test_summary_structure_and_values():
    s = summarize(ALL)
    json.dumps(s, allow_nan=False)  # JSON-ready: no NaN, no tuples, no enums
    assert (s["n_results"], s["n_scored"], s["n_unscored"]) == (6, 5, 1)
    overall = s["overall"]
    assert overall["compile_rate"] == pytest.approx(0.8)
    assert overall["fast_p"]["vs_eager"]["fast_1"] == pytest.approx(0.4)
    # vs baseline: over the kernel->kernel results only (R3, R4): geomean of R3's 1.0
    assert overall["speedup"]["vs_baseline"] == {"n": 1, "geomean": 1.0, "mean": 1.0}
    assert overall["arena_points_mean"] == pytest.approx(146.0)
    assert set(s["by_category"]) == {"gemm", "norm"}
    # norm: R1, R2 scored (R6 not): both compiled and correct
    assert s["by_category"]["norm"]["n"] == 2 and s["by_category"]["norm"]["n_unscored"] == 1
    assert s["by_category"]["norm"]["correct_rate"] == 1.0
    # gemm: R3, R4, R5: compiled 2/3, correct 1/3; fast_1 vs eager: R3 (4.0) -> 1/3
    assert s["by_category"]["gemm"]["compile_rate"] == pytest.approx(2 / 3)
    assert s["by_category"]["gemm"]["fast_p"]["vs_eager"]["fast_1"] == pytest.approx(1 / 3)
    # by kind: torch->kernel R1, R2, R5 scored: correct 2/3; kernel->kernel R3, R4: correct 1/2
    assert s["by_kind"]["torch->kernel"]["correct_rate"] == pytest.approx(2 / 3)
    assert s["by_kind"]["kernel->kernel"]["correct_rate"] == pytest.approx(0.5)
    assert s["by_agent"]["agent"]["n"] == 5
    assert s["generalization"]["p_holdout_given_seen"] == pytest.approx(2 / 3)
    assert s["points"]["unchanged_kernel_arena_points"] == 220.0
    assert s["fast_p_curve"]["vs_eager"][0] == [0.0, pytest.approx(0.6)]
    assert "per_iteration" not in s
    assert summarize(ALL, attempts=[])["per_iteration"] == []


def test_summary_of_nothing_is_json_ready():
    s = summarize([], attempts=[])
    json.dumps(s, allow_nan=False)
    assert s["overall"]["correct_rate"] is None and s["by_category"] == {}
