"""Runs that are not the happy case: nothing timed (CPU / interpreter), nothing finished, agents not
confined, hostile names."""

from __future__ import annotations

import json

import pytest
from report_html_tables import parse_page
from report_sample_run import Outcome, build_sample_run

from kernellab.report import load_run, render_run
from kernellab.score import JobSpec, Store


@pytest.fixture(scope="module")
def untimed(untimed_dir):
    return load_run(untimed_dir)


def test_untimed_run_says_not_timed_in_every_form(untimed):
    assert not untimed.timed and untimed.modes == ("interpret",) and untimed.device_label == "cpu"
    page = render_run(untimed, "html")
    tables, _ = parse_page(page)
    assert 'class="banner untimed"' in page
    rows = {(r[0][0], r[3][0]): dict(zip(tables["tasks"].keys, r, strict=True)) for r in tables["tasks"].rows}
    rms = rows["normalization/rmsnorm", "claude"]
    assert rms["correct"][0] == "yes" and rms["speedup_vs_eager"] == ("not timed", None)
    assert rms["speedup_vs_baseline"] == ("—", None)  # no baseline kernel to time against
    assert rows["matmul/gemm_bias_relu", "codex"]["speedup_vs_eager"] == ("—", None)  # wrong kernel
    assert rows["activation/gelu", "codex"]["status"][0] == "unsupported_in_interpreter"
    claude = tables["agents"].row("claude")
    assert claude["geomean_vs_eager"][0] == "not timed" and claude["fast_1_vs_eager"][0] == "not timed"
    assert claude["correct_rate"][0] == "100.0%"
    assert tables["agents"].row("codex")["n_unscored"][0] == "1"
    # the timing plots are left out, and one note says why (test_report_layout.py checks the rest)
    assert "not timed (no speedups in this run)" not in page and page.count('data-untimed-plots="1"') == 1

    md = render_run(untimed, "md")
    assert "**Nothing was timed**" in md and "| not timed |" in md

    doc = json.loads(render_run(untimed, "json"))
    assert doc["run"]["timed"] is False and doc["summary"]["n_unscored"] == 1
    assert all(t["speedup_vs_eager"] is None for t in doc["tasks"])
    assert doc["summary"]["overall"]["fast_p"]["vs_eager"]["fast_1"] is None


def test_empty_run_renders_in_every_form(empty_dir):
    report = load_run(empty_dir)
    assert report.rows == () and report.summary["n_results"] == 0
    page = render_run(report, "html")
    assert "this run has no finished jobs yet" in page and 'data-report="run"' in page
    tables, _ = parse_page(page)
    assert tables["tasks"].rows == [] and tables["agents"].rows == []
    assert "no finished jobs" in render_run(report, "md")
    doc = json.loads(render_run(report, "json"))
    assert doc["tasks"] == [] and doc["summary"]["overall"]["correct_rate"] is None


def test_unconfined_run_is_marked_in_every_form(unconfined_dir):
    report = load_run(unconfined_dir)
    page = render_run(report, "html")
    assert 'class="banner unconfined" data-unconfined="1"' in page and "UNCONFINED RUN" in page
    tables, _ = parse_page(page)
    assert tables["agents"].row("claude")["confined"][0] == "NO — unconfined"
    md = render_run(report, "md")
    assert "**⚠ UNCONFINED RUN**" in md and "- confined: **NO**" in md
    doc = json.loads(render_run(report, "json"))
    assert doc["run"]["confined"] is False and all(t["confined"] is False for t in doc["tasks"])


def test_names_from_a_run_are_escaped(tmp_path):
    evil = "<img src=x onerror=alert(1)>"
    run_dir = build_sample_run(tmp_path / "r", agents=(evil,), tasks=("activation/gelu",),
                               outcomes={evil: {"activation/gelu": Outcome(1.3)}})
    page = render_run(load_run(run_dir), "html")
    assert evil not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_unfinished_jobs_are_left_out_and_counted(tmp_path):
    run_dir = build_sample_run(tmp_path / "r", agents=("claude",), tasks=("activation/gelu",))
    with Store.open(run_dir) as store:
        store.add_jobs(1, [JobSpec("reduction/softmax", "claude", category="reduction")])
    report = load_run(run_dir)
    assert len(report.rows) == 1 and report.unfinished == 1
    assert "unfinished jobs <b>1</b>" in render_run(report, "html")
    assert "- unfinished jobs: 1 (pending or running; not shown)" in render_run(report, "md")
    assert json.loads(render_run(report, "json"))["run"]["unfinished"] == 1
