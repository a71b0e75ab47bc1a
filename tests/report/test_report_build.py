"""Loading a run directory: rows, runs and the summary are the score layer's, read from a real store."""

from __future__ import annotations

import sqlite3

import pytest
from report_sample_run import H100, OUTCOMES, TASKS, build_sample_run

from kernellab.report import ReportError, load_run
from kernellab.score import (
    Store,
    attempt_points_from_store,
    results_from_store,
    summarize,
)


def test_summary_is_the_score_layers_summary(sample_dir, sample):
    with Store.open(sample_dir, create=False) as store:
        expected = summarize(results_from_store(store), attempt_points_from_store(store))
    assert sample.summary == expected
    assert sample.summary["n_results"] == len(sample.rows) == len(TASKS) * len(OUTCOMES)


def test_rows_carry_each_jobs_scoring_verdict_and_points(sample):
    rows = {(r.task_id, r.agent): r for r in sample.rows}
    rms = rows["normalization/rmsnorm", "claude"]
    assert rms.correct and rms.compiled and rms.status == "passed"
    assert rms.speedup_vs_eager == pytest.approx(2.4) and rms.speedup_vs_compile == pytest.approx(1.5)
    assert rms.speedup_vs_baseline is None and rms.kind == "torch->kernel"
    assert rms.arena_points == pytest.approx(20 + 100 + 240) and rms.gain_points == pytest.approx(140)
    assert rms.attempts == 4 and rms.holdout_correct is True
    ln = rows["normalization/layernorm", "codex"]  # kernel→kernel: S is the speedup vs the baseline kernel
    assert ln.kind == "kernel->kernel" and ln.speedup_vs_baseline == pytest.approx(1.05)
    assert ln.arena_points == pytest.approx(225) and ln.gain_points == pytest.approx(5)
    gemm = rows["matmul/gemm_bias_relu", "codex"]
    assert (gemm.compiled, gemm.correct, gemm.speedup_vs_eager, gemm.arena_points) == (True, False, None, 20)
    sdpa = rows["attention/sdpa_causal", "codex"]
    assert sdpa.status == "timeout" and not sdpa.compiled and sdpa.arena_points == 0
    assert rows["reduction/softmax", "claude"].holdout_correct is False
    assert rows["attention/sdpa_causal", "claude"].holdout_correct is None


def test_run_header_comes_from_the_run_and_its_verdicts(sample):
    [run] = sample.runs
    assert run.device == H100 and run.confined and run.modes == ("gpu",)
    assert sample.versions == {"kernellab": "0.1.0", "torch": "2.11.0", "triton": "3.6.0", "python": "3.11.9"}
    assert sample.timed and sample.confined and sample.agents == ("claude", "codex")
    assert sample.categories == ("activation", "attention", "matmul", "normalization", "reduction")


def test_per_agent_breakdowns_match_summaries_of_each_agent(sample):
    for agent in sample.agents:
        own = summarize([r for r in sample.results if r.agent == agent])
        assert sample.breakdowns["agent_category"][agent] == own["by_category"]
        assert sample.breakdowns["quadrants_by_agent"][agent] == own["generalization"]["quadrants"]
        assert sample.breakdowns["fast_p_curve_by_agent"][agent] == own["fast_p_curve"]
        assert sample.breakdowns["cost_by_agent"][agent] == own["cost"]
    rows = sample.breakdowns["per_iteration_by_agent"]["claude"]
    assert [r["iteration"] for r in rows] == [1, 2, 3]
    assert rows[0]["compile_rate"] == 0 and rows[2]["correct_rate"] == 1


def test_device_missing_from_the_run_record_is_taken_from_its_verdicts(tmp_path):
    run_dir = build_sample_run(tmp_path / "r", agents=("claude",), tasks=("activation/gelu",))
    with sqlite3.connect(run_dir / "results.sqlite") as db:
        db.execute("UPDATE runs SET device = NULL")
    assert load_run(run_dir).device_label == H100


def test_several_runs_in_one_directory_are_reported_whole(tmp_path):
    run_dir = build_sample_run(tmp_path / "r", agents=("claude",), tasks=("activation/gelu",))
    build_sample_run(run_dir, agents=("codex",), tasks=("activation/gelu",), confined=False)
    report = load_run(run_dir)
    assert [r.run_id for r in report.runs] == [1, 2]
    assert {(r.agent, r.run_id, r.confined) for r in report.rows} == {("claude", 1, True), ("codex", 2, False)}
    assert not report.confined


def test_a_campaigns_re_timed_finalists_are_reported_with_their_interval(tmp_path):
    import json

    from kernellab.report.render import render_run as render
    from kernellab.score.store_records import RETIME

    run_dir = build_sample_run(tmp_path / "r", agents=("claude",), tasks=("activation/gelu", "normalization/rmsnorm"))
    assert all(r.retimed_speedup_vs_eager is None for r in load_run(run_dir).rows)
    assert "re-timed" not in render(load_run(run_dir), "md")  # no column without a re-timing
    with Store.open(run_dir, create=False) as store:
        job = next(j for j in store.jobs() if j.task_id == "normalization/rmsnorm")
        store.record_event(job, RETIME, {"speedup_vs_eager_geomean": 9.0, "speedup_vs_eager_ci95": [8.5, 9.5],
                                         "samples": [1.0, 1.0, 1.0]})  # superseded by the later one
        store.record_event(job, RETIME, {"speedup_vs_eager_geomean": 2.5, "speedup_vs_eager_ci95": [2.4, 2.6],
                                         "samples": [2.4, 2.5, 2.6]})
    report = load_run(run_dir)
    rows = {r.task_id: r for r in report.rows}
    rms, gelu = rows["normalization/rmsnorm"], rows["activation/gelu"]
    assert (rms.retimed_speedup_vs_eager, rms.retimed_ci95, rms.retimed_rounds) == (2.5, (2.4, 2.6), 3)
    assert gelu.retimed_speedup_vs_eager is None
    text = render(report, "md")
    assert "| geomean speedup vs eager, re-timed finalists | 2.50× |" in text
    assert "2.50× [2.400, 2.600]" in text
    [row] = [r for r in json.loads(render(report, "json"))["tasks"] if r["task_id"] == "normalization/rmsnorm"]
    assert row["retimed_speedup_vs_eager"] == 2.5 and row["retimed_ci95"] == [2.4, 2.6]


@pytest.mark.parametrize("make, message", [
    (lambda p: p / "nope", "does not exist"),
    (lambda p: (p / "file.txt").write_text("x") and p / "file.txt", "is a file"),
    (lambda p: p, "has no results.sqlite"),
    (lambda p: (p / "results.sqlite").write_bytes(b"not a database" * 100) and p, "not a usable results store"),
])
def test_unusable_run_directories_say_why_in_one_line(tmp_path, make, message):
    with pytest.raises(ReportError, match=message) as info:
        load_run(make(tmp_path))
    assert "\n" not in str(info.value)
