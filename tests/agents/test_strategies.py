"""Strategy decisions as pure functions over real Verdict records with hand-set timings: keep/revert
with CI margins, each stop rule, parent selection and archive pruning, picking the fastest, the
verifier's answer parsing and its precision/recall, and how strategy options are read."""

from __future__ import annotations

import random

import pytest

from kernellab.agents.base import Budget
from kernellab.agents.strategies import (
    StrategyError,
    create_strategy,
    register_strategy,
    registered_strategies,
)
from kernellab.agents.strategies.base import Strategy
from kernellab.agents.strategies.compare import (
    compare_timings,
    fastest,
    is_faster,
    roofline_pct,
)
from kernellab.agents.strategies.evolve import (
    Member,
    distance,
    fitness,
    novelty,
    prune,
    select_parent,
)
from kernellab.agents.strategies.keep_revert import keep_or_revert
from kernellab.agents.strategies.stopping import (
    StopRules,
    StopState,
    cost_stop,
    iterations_stop,
    patience_stop,
    roofline_stop,
    speedup_stop,
    time_stop,
)
from kernellab.agents.strategies.verifier import parse_prediction, precision_recall
from kernellab.evaluate.verdict import Mode, Stage, Status, Timing, Verdict


def timing(config: str, us: float, ci: tuple[float, float] | None = None, *, dtype: str = "float32",
           phase: str = "forward", eager_us: float = 100.0, pct: float | None = 50.0) -> Timing:
    lo, hi = ci if ci is not None else (us * 0.99, us * 1.01)
    return Timing(config=config, dtype=dtype, phase=phase, method="events", samples=100, candidate_us=us,
                  ci95_us=(lo, hi), eager_us=eager_us, speedup_vs_eager=eager_us / us, pct_of_roofline=pct)


def verdict(*, correct: bool = True, timings: list[Timing] | None = None, baseline_speedup: float | None = None,
            mode: Mode = Mode.GPU) -> Verdict:
    v = Verdict(task={"id": "elementwise/relu", "sha256": "t" * 64}, candidate={"path": "k.py", "sha256": "c" * 64},
                device="NVIDIA H100" if mode is Mode.GPU else "cpu", mode=mode, versions={}, policy="strict", seed=0)
    v.compiled = True
    v.correct = correct
    v.status = Status.PASSED if correct else Status.FAILED
    if not correct:
        v.failed_stage, v.error = Stage.SHAPE_SWEEP, "output 0: error above tolerance"
    v.timings = list(timings or [])
    forward = [t for t in v.timings if t.phase == "forward"]
    if forward:
        product = 1.0
        for t in forward:
            product *= t.speedup_vs_eager
        v.speedup = {"vs_eager": product ** (1 / len(forward)), "vs_compile": None, "vs_baseline": baseline_speedup}
    return v


def untimed(correct: bool = True) -> Verdict:
    return verdict(correct=correct, mode=Mode.INTERPRET)


# ------------------------------------------------------------------------------------ keep / revert


def test_an_incorrect_candidate_is_reverted_whatever_its_speed():
    d = keep_or_revert(verdict(correct=False, timings=[timing("M=1", 1.0)]), verdict(timings=[timing("M=1", 100.0)]))
    assert not d.keep and d.reason == "incorrect (failed at shape_sweep)"


def test_the_first_correct_kernel_is_kept_even_untimed():
    assert keep_or_revert(untimed(), None).keep
    assert keep_or_revert(untimed(), untimed(correct=False)).reason == "the first correct kernel"


def test_under_the_interpreter_a_correct_candidate_cannot_replace_a_correct_kernel():
    d = keep_or_revert(untimed(), untimed())
    assert not d.keep and d.reason.startswith("not timed") and d.comparison.matched == 0


def test_clearly_faster_beyond_both_confidence_intervals_is_kept():
    incumbent = verdict(timings=[timing("M=1", 100.0, (99.0, 101.0))])
    candidate = verdict(timings=[timing("M=1", 90.0, (89.0, 91.0))])
    d = keep_or_revert(candidate, incumbent)
    assert d.keep
    assert d.comparison.speedup == pytest.approx(100 / 90)
    assert d.comparison.speedup_low == pytest.approx(99 / 91)  # incumbent CI low over candidate CI high


def test_faster_by_the_point_estimate_but_inside_the_noise_is_reverted():
    incumbent = verdict(timings=[timing("M=1", 100.0, (95.0, 105.0))])
    candidate = verdict(timings=[timing("M=1", 96.0, (92.0, 103.0))])
    d = keep_or_revert(candidate, incumbent)
    assert d.comparison.speedup > 1.04 and not d.keep
    assert "not 1% faster beyond the timing CIs" in d.reason


@pytest.mark.parametrize(("candidate_us", "keep"), [(98.5, True), (99.3, False)])
def test_the_one_percent_margin_is_beyond_the_intervals(candidate_us, keep):
    incumbent = verdict(timings=[timing("M=1", 100.0, (99.9, 100.1))])
    candidate = verdict(timings=[timing("M=1", candidate_us, (candidate_us - 0.1, candidate_us + 0.1))])
    # 99.9 / 98.6 = 1.013 > 1.01 (kept); 99.9 / 99.4 = 1.005 (reverted)
    assert keep_or_revert(candidate, incumbent).keep is keep
    assert keep_or_revert(candidate, incumbent, min_gain=0.02).keep is False


def test_speed_is_a_geometric_mean_over_the_configs_both_verdicts_timed():
    incumbent = verdict(timings=[timing("M=1", 100.0, (100.0, 100.0)), timing("M=2", 100.0, (100.0, 100.0)),
                                 timing("M=1", 200.0, (200.0, 200.0), phase="forward+backward")])
    candidate = verdict(timings=[timing("M=1", 100 / 1.2, (100 / 1.2, 100 / 1.2)),
                                 timing("M=2", 100 / 0.9, (100 / 0.9, 100 / 0.9)),
                                 timing("M=3", 1.0),  # not in the incumbent: not compared
                                 timing("M=1", 200.0, (200.0, 200.0), phase="forward+backward")])
    c = compare_timings(candidate, incumbent)
    assert c.matched == 3
    assert c.speedup == pytest.approx((1.2 * 0.9 * 1.0) ** (1 / 3))
    assert keep_or_revert(candidate, incumbent).keep  # (1.08)^(1/3) = 1.026 > 1.01
    slower = verdict(timings=[timing("M=1", 100 / 0.9, (111.0, 111.2))])
    assert not keep_or_revert(slower, incumbent).keep


def test_timings_of_another_dtype_or_phase_do_not_match():
    a = verdict(timings=[timing("M=1", 50.0, dtype="float16")])
    b = verdict(timings=[timing("M=1", 100.0, dtype="float32")])
    assert not compare_timings(a, b).timed


# ------------------------------------------------------------------------------------ fastest


def test_fastest_correct_by_shared_timings_then_untimed_first_correct():
    slow = verdict(timings=[timing("M=1", 100.0), timing("M=2", 100.0)])
    quick = verdict(timings=[timing("M=1", 60.0), timing("M=2", 70.0)])
    wrong = verdict(correct=False, timings=[timing("M=1", 1.0)])
    index, why = fastest([slow, wrong, None, quick])
    assert index == 3 and "fastest of 2 correct kernels" in why
    assert is_faster(quick, slow) and not is_faster(slow, quick)
    index, why = fastest([untimed(False), untimed(), untimed()])
    assert index == 1 and why.startswith("not timed")
    assert fastest([untimed(False), None]) == (None, "no correct kernel")


# ------------------------------------------------------------------------------------ stop rules


def test_each_budget_rule_fires_at_its_limit():
    budget = Budget.parse("30m,$5,50it")
    assert iterations_stop(budget, StopState(iterations=49)) is None
    assert iterations_stop(budget, StopState(iterations=50)).rule == "iterations"
    assert time_stop(budget, StopState(elapsed_s=1799)) is None
    assert time_stop(budget, StopState(elapsed_s=1800)).rule == "time"
    assert cost_stop(budget, StopState(cost_usd=4.99)) is None
    assert cost_stop(budget, StopState(cost_usd=5.0)).reason == "cost budget reached: $5.00 of $5"
    assert all(rule(Budget(), StopState(iterations=10**6, elapsed_s=1e9, cost_usd=1e9)) is None
               for rule in (iterations_stop, time_stop, cost_stop))


def test_patience_counts_reverts_in_a_row():
    assert patience_stop(3, StopState(not_improved=2)) is None
    assert patience_stop(3, StopState(not_improved=3)).reason == "3 proposals in a row were not kept (patience 3)"
    assert patience_stop(None, StopState(not_improved=100)) is None


def test_roofline_target_needs_timings():
    best = verdict(timings=[timing("M=1", 10.0, pct=70.0), timing("M=2", 10.0, pct=90.0),
                            timing("M=1", 10.0, phase="forward+backward", pct=10.0)])
    assert roofline_pct(best) == pytest.approx(80.0)  # forward timings only
    assert roofline_stop(80.0, StopState(best=best)).rule == "roofline"
    assert roofline_stop(81.0, StopState(best=best)) is None
    assert roofline_stop(1.0, StopState(best=untimed())) is None
    assert StopRules(target_roofline_pct=50).standing(StopState(best=untimed()))["roofline"] == "not timed"


def test_speedup_target_vs_eager_or_baseline():
    best = verdict(timings=[timing("M=1", 50.0, eager_us=100.0)], baseline_speedup=1.3)
    assert speedup_stop(2.0, "eager", StopState(best=best)).reason.startswith("the best kernel is x2.00 vs eager")
    assert speedup_stop(2.1, "eager", StopState(best=best)) is None
    assert speedup_stop(1.25, "baseline", StopState(best=best)).rule == "speedup"
    assert speedup_stop(1.5, "baseline", StopState(best=best)) is None
    assert speedup_stop(1.0, "eager", StopState(best=untimed())) is None
    assert speedup_stop(1.0, "eager", StopState(best=None)) is None
    standing = StopRules(target_speedup=3, target_vs="baseline").standing(StopState(best=best))
    assert standing["speedup"] == "x1.30 of x3 vs baseline"


def test_rules_fire_in_order_and_report_their_standing():
    rules = StopRules(budget=Budget.parse("10it,1m"), patience=2, target_speedup=1.5)
    assert rules.check(StopState(iterations=3, elapsed_s=10)) is None
    assert rules.check(StopState(iterations=10, elapsed_s=100, not_improved=5)).rule == "iterations"
    assert rules.check(StopState(iterations=3, elapsed_s=100, not_improved=5)).rule == "time"
    assert rules.check(StopState(iterations=3, not_improved=2)).rule == "patience"
    best = verdict(timings=[timing("M=1", 50.0)])
    assert rules.check(StopState(iterations=3, best=best)).rule == "speedup"
    standing = rules.standing(StopState(iterations=3, elapsed_s=10, not_improved=1))
    assert standing == {"iterations": "7 of 10 left", "time": "50s left", "patience": "1 of 2 not kept in a row",
                        "speedup": "not timed"}
    assert rules.time_left(StopState(elapsed_s=45)) == 15
    assert StopRules().time_left(StopState(elapsed_s=45)) is None
    with pytest.raises(ValueError, match="target_vs"):
        StopRules(target_vs="cublas")


# ------------------------------------------------------------------------------------ evolve selection


KERNEL_A = "def k(x):\n    y = load(x)\n    z = y * 2\n    store(z)\n    return z\n"
KERNEL_A2 = KERNEL_A.replace("y * 2", "y + y")
KERNEL_B = "import other\nclass Tiled:\n    pass\n"


def test_source_distance_and_novelty():
    assert distance(KERNEL_A, KERNEL_A) == 0.0
    assert 0.0 < distance(KERNEL_A, KERNEL_A2) < distance(KERNEL_A, KERNEL_B) == 1.0
    members = [Member("a", KERNEL_A), Member("a2", KERNEL_A2), Member("b", KERNEL_B)]
    assert novelty(members[2], members) > novelty(members[0], members)
    assert novelty(Member("x", KERNEL_A), [Member("x", KERNEL_A)]) == 0.0


def test_fitness_is_relative_speed_plus_weighted_novelty():
    members = [Member("fast", KERNEL_A, 2.0), Member("slow", KERNEL_A2, 1.0), Member("untimed", KERNEL_B)]
    f = fitness(members, novelty_weight=0.0)
    assert f == {"fast": 1.0, "slow": 0.5, "untimed": 0.0}
    f = fitness([Member("a", KERNEL_A), Member("b", KERNEL_B)], novelty_weight=0.5)  # nothing timed
    assert f == {"a": 1.5, "b": 1.5}


def test_a_full_tournament_picks_the_fittest_and_novelty_breaks_speed_ties():
    members = [Member("a", KERNEL_A, 1.0), Member("a2", KERNEL_A2, 1.0), Member("b", KERNEL_B, 1.0)]
    rng = random.Random(0)
    assert select_parent(members, rng, tournament=3, novelty_weight=0.3).id == "b"
    assert select_parent(members, rng, tournament=3, novelty_weight=0.0).id == "a"  # a tie: the earlier
    fast = [Member("a", KERNEL_A, 3.0), Member("a2", KERNEL_A2, 1.0), Member("b", KERNEL_B, 1.0)]
    assert select_parent(fast, rng, tournament=3, novelty_weight=0.3).id == "a"
    assert select_parent(fast, rng, tournament=3, exclude=["a"]).id == "b"
    assert select_parent(fast, rng, exclude=["a", "a2", "b"]) is None
    assert select_parent([], rng) is None


def test_small_tournaments_still_favour_the_fit():
    members = [Member(f"m{i}", KERNEL_A + "#" * i, float(i + 1)) for i in range(6)]
    rng = random.Random(1)
    picks = [select_parent(members, rng, tournament=2, novelty_weight=0.0).id for _ in range(300)]
    assert picks.count("m5") > picks.count("m0") == 0  # the least fit never wins a tournament of two


def test_pruning_drops_the_least_fit_but_never_a_protected_member():
    members = [Member("best", KERNEL_A, 3.0), Member("twin", KERNEL_A2, 1.0), Member("other", KERNEL_B, 1.0)]
    kept = prune(members, 2, novelty_weight=0.3, protect=["best"])
    assert [m.id for m in kept] == ["best", "other"]  # the twin is slow and like the best
    assert [m.id for m in prune(members, 1, protect=["twin"])] == ["twin"]
    assert prune(members, 5) == members


# ------------------------------------------------------------------------------------ the verifier


@pytest.mark.parametrize(("text", "expected"), [
    ('{"correct": false, "confidence": 0.9, "reason": "no mask"}', (False, 0.9, "no mask")),
    ('Sure.\n```json\n{"correct": true, "confidence": 2}\n```', (True, 1.0, "")),
    ('{"verdict": 1} then {"correct": true}', (True, None, "")),
    ("INCORRECT: the mask is missing", (False, None, "INCORRECT: the mask is missing")),
    ("correct.", (True, None, "correct.")),
    ("I cannot tell", (None, None, "I cannot tell")),
])
def test_the_verifier_answer_is_parsed(text, expected):
    assert parse_prediction(text) == expected


def _record(predicted, actual=None, *, status=None, skipped=None):
    status = status or ("passed" if actual else "failed")
    verdict_summary = None if actual is None else {"status": status, "correct": actual}
    return {"kind": "iteration", "verifier": {"predicted_correct": predicted}, "verdict": verdict_summary,
            "skipped": skipped}


def test_precision_and_recall_against_real_verdicts():
    records = [_record(True, True), _record(True, True), _record(True, False), _record(False, True),
               _record(False, False), _record(False, False),
               _record(False, None, skipped="the verifier predicted it incorrect"),  # unevaluated: truth unknown
               _record(None, True),  # the call failed: no prediction
               _record(True, False, status="unsupported_in_interpreter"),  # says nothing about the kernel
               {"kind": "iteration", "verifier": None, "verdict": {"status": "passed", "correct": True}},
               {"kind": "stop"}]
    pr = precision_recall(records)
    assert (pr["tp"], pr["fp"], pr["fn"], pr["tn"]) == (2, 1, 1, 2)
    assert pr["precision"] == pytest.approx(2 / 3) and pr["recall"] == pytest.approx(2 / 3)
    assert pr["accuracy"] == pytest.approx(4 / 6) and pr["skip_precision"] == pytest.approx(2 / 3)
    assert (pr["predictions"], pr["judged"], pr["unverified"], pr["errors"], pr["skipped"]) == (9, 6, 2, 1, 1)
    empty = precision_recall([])
    assert empty["precision"] is None and empty["recall"] is None and empty["predictions"] == 0


# ------------------------------------------------------------------------------------ registry and options


def test_the_built_in_strategies_are_registered():
    assert set(registered_strategies()) == {"single", "best-of-n", "keep-revert", "evolve"}
    with pytest.raises(StrategyError, match="unknown strategy 'greedy'; known: best-of-n, evolve"):
        create_strategy("greedy")
    with pytest.raises(ValueError, match="registered twice"):
        register_strategy("single")(type("Other", (Strategy,), {"run": lambda self, ctx: None}))


def test_options_given_as_text_are_converted_and_checked():
    s = create_strategy("evolve", population="4", crossover_rate="0.5", target_speedup="2", patience="none",
                        verifier_model="m", verifier_base_url="http://127.0.0.1:1/v1")
    o = s.options
    assert (o.population, o.crossover_rate, o.target_speedup, o.patience) == (4, 0.5, 2.0, None)
    assert s.verifier_options().model == "m" and s.verifier_options().threshold == 0.5
    rules = s.stop_rules(Budget.parse("3it"))
    assert rules.target_speedup == 2.0 and rules.budget.iterations == 3
    assert create_strategy("keep-revert").options.patience == 5
    assert create_strategy("best-of-n", n=2).verifier_options() is None


@pytest.mark.parametrize(("name", "options", "message"), [
    ("single", {"n": "2"}, "strategy single: unknown option 'n'; its options: none"),
    ("best-of-n", {"n": "two"}, "option n must be a number, not 'two'"),
    ("best-of-n", {"n": "1.5"}, "option n must be a whole number"),
    ("best-of-n", {"n": "0"}, "n must be at least 1"),
    ("keep-revert", {"patience": "0"}, "patience must be at least 1"),
    ("keep-revert", {"target_vs": "cublas"}, "target_vs must be one of eager, compile, baseline"),
    ("evolve", {"crossover_rate": "2"}, "crossover_rate must lie between 0 and 1"),
    ("evolve", {"verifier_threshold": "0.5"}, None),
    ("evolve", {"verifier_model": "m", "verifier_audit": "1.5"}, "verifier_threshold and verifier_audit"),
    ("evolve", {"verifier_model": "m", "verifier_provider": "acme"}, "verifier_provider must be one of"),
    ("keep-revert", {"min_gain": "-0.1"}, "min_gain must not be negative"),
])
def test_bad_options_are_one_line_errors(name, options, message):
    if message is None:
        create_strategy(name, **options)
        return
    with pytest.raises(StrategyError, match=message) as info:
        create_strategy(name, **options)
    assert "\n" not in str(info.value) and str(info.value).startswith(f"strategy {name}: ")


# ------------------------------------------------------------------------------------ evaluations of a search


def test_search_evaluations_are_cheap_and_the_final_one_runs_everything():
    from kernellab.agents.strategies.evaluation import final_options, search_options
    from kernellab.evaluate.options import ALL_STAGES, EvalOptions

    base = EvalOptions(timing_budget_s=0.6, trials=3, configs="all")
    cheap = search_options(base)
    assert cheap.stages == {Stage.STATIC, Stage.LOAD, Stage.SMOKE, Stage.SHAPE_SWEEP, Stage.EDGE, Stage.BACKWARD,
                            Stage.TIMING}
    assert (cheap.configs, cheap.time_holdout, cheap.compile_baseline) == ("seen", False, False)
    assert (cheap.timing_budget_s, cheap.trials) == (0.3, 2)
    assert search_options(base, compile_baseline=True).compile_baseline  # a target vs torch.compile needs it
    full = final_options(cheap)
    assert full.stages == ALL_STAGES and full.configs == "all"


def test_when_nothing_is_kept_the_best_attempt_seen_is_judged():
    from kernellab.agents.solve import fallback
    from kernellab.agents.strategies.context import Candidate

    skeleton = Candidate("c0", 0, "class ModelNew: ...")
    wrong = Candidate("c1", 1, "wrong", verdict=verdict(correct=False))
    empty = Candidate("c2", 2, None)
    skipped = Candidate("c3", 3, "skipped", skipped="the verifier predicted it incorrect")
    later_wrong = Candidate("c4", 4, "wrong again", verdict=verdict(correct=False))
    assert fallback([skeleton, wrong, empty, skipped, later_wrong]).id == "c4"
    assert fallback([skeleton, empty, skipped]).id == "c3"  # judged kernels first, then any kernel
    assert fallback([skeleton, empty]) is None  # the starting skeleton is never the answer
    right = Candidate("c5", 5, "right", verdict=untimed())
    assert fallback([right, later_wrong]).id == "c5"


def test_recorded_agent_options_hide_secrets():
    from kernellab.agents.solve import redact

    def wrap():
        pass

    assert redact({"model": "gpt-5", "api_key": "sk-1", "api_key_env": "MY_KEY", "env": {"TOKEN": "t"},
                   "wrap": wrap, "timeout_s": 60, "extra_args": ("-v",)}) == {
        "model": "gpt-5", "api_key": "***", "api_key_env": "MY_KEY", "env": {"TOKEN": "***"}, "wrap": "<wrap>",
        "timeout_s": 60, "extra_args": "('-v',)"}
