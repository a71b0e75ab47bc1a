"""Scoring records built from a real results store: which attempt scores a job, summed costs, curves."""

from __future__ import annotations

import json

import pytest

from kernellab.evaluate.verdict import Status
from kernellab.score import (
    AttemptUsage,
    JobSpec,
    Store,
    TaskKind,
    attempt_points_from_store,
    results_from_store,
    summarize,
)
from kernellab.score.records import NO_CANDIDATE


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path) as s:
        yield s


def one_job(store: Store, **spec):
    run = store.create_run({}, confined=True)
    return store.add_jobs(run.id, [JobSpec("norm/rmsnorm", "claude", category="normalization", **spec)])[0]


def usage(cost: float, tokens: int = 100) -> AttemptUsage:
    return AttemptUsage(tokens_in=tokens, tokens_out=tokens // 10, cost_usd=cost, agent_steps=2, wall_s=10.0)


def test_final_attempt_scores_the_job_and_costs_add_up(store, verdict):
    job = one_job(store)
    store.record_attempt(job, "v1", verdict(correct=False), usage=usage(0.1))
    store.record_attempt(job, "v2", verdict(speedup=3.0), usage=usage(0.2), kept=True)
    store.record_attempt(job, "v2", verdict(speedup=2.5, holdout_speedup=2.0), usage=usage(0.0, 0), final=True)
    store.finish_job(job, "done")
    [r] = results_from_store(store, job.run_id)
    # the final re-evaluation scores, even though the kept attempt measured faster
    assert (r.status, r.compiled, r.correct) == ("passed", True, True)
    assert r.speedup_vs_eager == 2.5 and r.speedup_vs_compile == 1.25 and r.speedup_vs_baseline is None
    assert r.holdout_correct is True and r.holdout_speedup == 2.0
    # per-config forward speedups (the fwd+bwd timing is left out); roofline from the same timings
    assert r.seen_speedups == (2.5, 2.5)
    assert r.pct_of_roofline == pytest.approx(40.0)
    assert r.peak_mem_bytes == 4096 and r.peak_mem_ratio is None  # eager peak not measured
    # cost: every attempt. tokens 110 + 110 + 0 = 220; money 0.1 + 0.2 + 0 = 0.3; wall 30; steps 6
    assert (r.attempts, r.tokens, r.steps) == (3, 220, 6)
    assert r.cost_usd == pytest.approx(0.3) and r.wall_s == pytest.approx(30.0)
    assert (r.task_id, r.agent, r.category, r.kind) == ("norm/rmsnorm", "claude", "normalization",
                                                         TaskKind.TORCH_TO_KERNEL)


def test_without_final_the_last_kept_attempt_scores(store, verdict):
    job = one_job(store)
    store.record_attempt(job, "v1", verdict(speedup=1.2), kept=True)
    store.record_attempt(job, "v2", verdict(speedup=1.8), kept=True)
    store.record_attempt(job, "v3", verdict(speedup=5.0))  # measured faster, but reverted
    store.finish_job(job, "done")
    assert results_from_store(store)[0].speedup_vs_eager == 1.8


def test_without_flags_the_best_seen_attempt_scores(store, verdict):
    job = one_job(store)
    store.record_attempt(job, "v1", verdict(speedup=1.2))
    store.record_attempt(job, "v2", verdict(speedup=1.8, holdout=False))  # holdout never chooses
    store.record_attempt(job, "v3", verdict(correct=False))
    store.record_attempt(job, None, None)
    store.finish_job(job, "done")
    [r] = results_from_store(store)
    assert r.speedup_vs_eager == 1.8 and r.holdout_correct is False


def test_job_without_a_candidate_is_a_scored_failure(store):
    job = one_job(store)
    store.finish_job(job, "failed", error="agent produced nothing")
    [r] = results_from_store(store)
    assert r.status == NO_CANDIDATE and r.scored and not r.compiled and not r.correct
    assert r.attempts == 0 and r.cost_usd is None


def test_unfinished_jobs_are_left_out_unless_asked(store):
    run = store.create_run({}, confined=True)
    done, _ = store.add_jobs(run.id, [JobSpec("a", "x"), JobSpec("b", "x")])
    store.set_job_status(done, "running")
    store.finish_job(done, "done")
    assert [r.task_id for r in results_from_store(store)] == ["a"]
    assert [r.task_id for r in results_from_store(store, include_unfinished=True)] == ["a", "b"]


def test_kernel_to_kernel_job_and_unscored_verdict(store, verdict):
    job = one_job(store, kind=TaskKind.KERNEL_TO_KERNEL)
    store.record_attempt(job, "k", verdict(correct=False, status=Status.UNSUPPORTED_IN_INTERPRETER))
    store.finish_job(job, "done")
    [r] = results_from_store(store)
    assert r.kind is TaskKind.KERNEL_TO_KERNEL
    assert r.status == "unsupported_in_interpreter" and not r.scored


def test_attempt_points_leave_out_final_re_evaluations(store, verdict):
    job = one_job(store)
    store.record_attempt(job, "v1", verdict(correct=False, compiled=False))
    store.record_attempt(job, "v2", verdict(speedup=1.5))
    store.record_attempt(job, None, None)
    store.record_attempt(job, "v2", verdict(speedup=1.4), final=True)
    points = attempt_points_from_store(store, job.run_id)
    assert [(p.iteration, p.compiled, p.correct, p.speedup, p.status) for p in points] == [
        (1, False, False, None, "failed"), (2, True, True, 1.5, "passed"), (3, False, False, None, NO_CANDIDATE)]
    assert {p.job for p in points} == {job.key}


def test_summary_of_a_stored_run(store, verdict):
    run = store.create_run({}, confined=True)
    jobs = store.add_jobs(run.id, [JobSpec(f"t{i}", "claude", category="c") for i in range(3)])
    store.record_attempt(jobs[0], "a", verdict(speedup=2.0), usage=usage(1.0))
    store.record_attempt(jobs[1], "b", verdict(speedup=0.5, holdout=False), usage=usage(1.0))
    store.record_attempt(jobs[2], "c", verdict(correct=False), usage=usage(1.0))
    for j in jobs:
        store.finish_job(j, "done")
    s = summarize(results_from_store(store), attempt_points_from_store(store))
    json.dumps(s, allow_nan=False)
    # correct 2/3; fast_1: only 2.0 -> 1/3; geomean(2, 0.5) = 1; P(holdout | seen) = 1/2; cost 3.0
    assert s["overall"]["correct_rate"] == pytest.approx(2 / 3)
    assert s["overall"]["fast_p"]["vs_eager"]["fast_1"] == pytest.approx(1 / 3)
    assert s["overall"]["speedup"]["vs_eager"]["geomean"] == pytest.approx(1.0)
    assert s["generalization"]["p_holdout_given_seen"] == pytest.approx(0.5)
    assert s["cost"]["cost_usd"]["total"] == pytest.approx(3.0)
    assert s["per_iteration"][0]["correct_rate"] == pytest.approx(2 / 3)


def test_peak_memory_vs_eager_comes_from_the_stored_eager_peak(store, verdict):
    """The timing stage writes the eager reference's peak next to the candidate's; scoring divides them
    (per forward timing, geometric mean) once the verdict has gone through the store and back."""
    job = one_job(store)
    v = verdict(speedup=2.0)
    for t, eager_peak in zip(v.timings, (8192, 2048, 4096)):
        t.eager_peak_mem_bytes = eager_peak
    store.record_attempt(job, "v1", v, final=True)
    store.finish_job(job, "done")
    [r] = results_from_store(store, job.run_id)
    # forward rows only: 4096/8192 and 4096/2048 -> geomean of 0.5 and 2.0 is 1.0
    assert r.peak_mem_ratio == pytest.approx(1.0)
    [a] = store.attempts(job)
    assert [t.eager_peak_mem_bytes for t in a.verdict.timings] == [8192, 2048, 4096]
