"""Agents ranked across runs: by geomean speedup vs eager on correct kernels; ties explained."""

from __future__ import annotations

import json

import pytest
from report_html_tables import parse_page
from report_sample_run import TASKS, Outcome, build_sample_run

from kernellab.report import build_leaderboard, load_run, render_leaderboard
from kernellab.score import summarize


def test_ranked_by_geomean_speedup_on_correct_kernels(sample):
    lb = build_leaderboard([sample])
    assert [(s.rank, s.agent) for s in lb.standings] == [(1, "claude"), (2, "codex")]
    assert all(s.tie_note is None for s in lb.standings)
    doc = json.loads(render_leaderboard(lb, "json"))
    assert doc["ranked_by"] == ["geomean speedup vs eager", "correctness rate", "fast₁ vs eager", "scored results"]
    top = doc["standings"][0]
    block = sample.summary["by_agent"]["claude"]
    assert top["geomean_speedup_vs_eager"] == pytest.approx(block["speedup"]["vs_eager"]["geomean"])
    assert top["correct_rate"] == block["correct_rate"] and top["fast_1_vs_eager"] == block["fast_p"]["vs_eager"]["fast_1"]
    assert top["runs"] == ["h100-run"] and top["confined"] is True


def test_ties_are_broken_in_order_and_explained(tmp_path):
    fast = {t: Outcome(2.0) for t in TASKS}
    one_wrong = {**fast, "matmul/gemm_bias_relu": Outcome(None)}
    run = build_sample_run(tmp_path / "ties", agents=("alpha", "beta", "gamma"),
                           outcomes={"alpha": fast, "beta": one_wrong, "gamma": fast})
    lb = build_leaderboard([load_run(run)])
    assert [(s.rank, s.agent) for s in lb.standings] == [(1, "alpha"), (1, "gamma"), (3, "beta")]
    alpha, gamma, beta = lb.standings
    assert alpha.tie_note is None
    assert gamma.tie_note == "tied with alpha on every criterion: shared rank"
    assert beta.tie_note == ("same geomean speedup vs eager as gamma (2.00×); ranked below it on correctness rate "
                             "(83.3% vs 100.0%)")
    md = render_leaderboard(lb, "md")
    assert "ranked below it on correctness rate" in md and "| 1 | gamma |" in md and "| 3 | beta |" in md


def test_runs_are_pooled_and_mixed_devices_are_flagged(sample, sample_dir, h200_dir):
    h200 = load_run(h200_dir)
    lb = build_leaderboard([sample, h200])
    assert lb.summary == summarize([*sample.results, *h200.results])
    assert lb.devices == ("NVIDIA H100 80GB HBM3", "NVIDIA H200")
    assert lb.standings[0].runs == ("h100-run", "h200-run") and lb.standings[0].block["n"] == 12
    page = render_leaderboard(lb, "html")
    assert "speedups are pooled across hardware" in page
    tables, body = parse_page(page)
    assert body["data-report"] == "leaderboard" and "sortable" in tables["leaderboard"].classes
    assert [r[1][0] for r in tables["leaderboard"].rows] == [s.agent for s in lb.standings]
    assert len(tables["sources"].rows) == 2 and 'id="fig-ranking"' in page


def test_untimed_runs_rank_by_correctness(untimed_dir):
    lb = build_leaderboard([load_run(untimed_dir)])
    assert [s.agent for s in lb.standings] == ["claude", "codex"]
    assert lb.standings[1].tie_note.startswith("same geomean speedup vs eager as claude (no correct timed kernel); "
                                               "ranked below it on correctness rate")
    page = render_leaderboard(lb, "html")
    assert "agents are ranked by correctness" in page and "not timed" in page


def test_unconfined_agents_are_marked(sample, unconfined_dir):
    lb = build_leaderboard([sample, load_run(unconfined_dir)])
    claude = next(s for s in lb.standings if s.agent == "claude")
    assert not claude.confined
    assert "UNCONFINED" in render_leaderboard(lb, "html") and "**⚠ UNCONFINED**: claude" in render_leaderboard(lb, "md")


def test_empty_leaderboard_renders(empty_dir):
    lb = build_leaderboard([load_run(empty_dir)])
    assert lb.standings == ()
    assert "nothing to rank" in render_leaderboard(lb, "html")
    assert json.loads(render_leaderboard(lb, "json"))["standings"] == []
