"""The three forms of a run report (HTML, Markdown, JSON) say the same thing, and it is what
``summarize()`` computed."""

from __future__ import annotations

import json
import re

import pytest
from report_html_tables import parse_page

from kernellab.report import render_run
from kernellab.report.html import TEMPLATES

TASK_KEYS = ["run_id", "task_id", "category", "kind", "agent", "seed", "strategy", "status", "scored", "compiled",
             "correct", "holdout_correct", "speedup_vs_eager", "speedup_vs_compile", "speedup_vs_baseline",
             "holdout_speedup_vs_eager", "pct_of_roofline", "peak_mem_bytes", "tokens_in", "tokens_out", "tokens",
             "steps", "cost_usd", "wall_s", "attempts", "arena_points", "gain_points", "confined",
             "retimed_speedup_vs_eager", "retimed_ci95", "retimed_rounds"]


@pytest.fixture(scope="module")
def page(sample):
    return render_run(sample, "html")


@pytest.fixture(scope="module")
def tables(page):
    return parse_page(page)[0]


def test_json_is_the_summary_plus_rows_under_stable_keys(sample):
    doc = json.loads(render_run(sample, "json"))
    assert list(doc) == ["schema", "report", "run", "summary", "breakdowns", "tasks"]
    assert doc["schema"] == 1 and doc["report"] == "run"
    assert doc["summary"] == json.loads(json.dumps(sample.summary))
    assert doc["run"]["devices"] == ["NVIDIA H100 80GB HBM3"] and doc["run"]["confined"] is True
    assert doc["run"]["versions"]["torch"] == "2.11.0" and doc["run"]["timed"] is True
    assert len(doc["tasks"]) == 12 and all(list(t) == TASK_KEYS for t in doc["tasks"])
    row = next(t for t in doc["tasks"] if t["task_id"] == "normalization/rmsnorm" and t["agent"] == "claude")
    assert row["speedup_vs_eager"] == pytest.approx(2.4) and row["arena_points"] == pytest.approx(360)
    assert set(doc["breakdowns"]) == {"agent_category", "fast_p_curve_by_agent", "quadrants_by_agent",
                                      "cost_by_agent", "per_iteration_by_agent"}


def test_html_agent_and_category_tables_hold_the_summary_numbers(sample, tables):
    for name, table, group in (("agents", tables["agents"], "by_agent"),
                               ("categories", tables["categories"], "by_category")):
        assert len(table.rows) == len(sample.summary[group]), name
        for key, block in sample.summary[group].items():
            row = table.row(key)
            for column, value in (("correct_rate", block["correct_rate"]),
                                  ("fast_1_vs_eager", block["fast_p"]["vs_eager"]["fast_1"]),
                                  ("geomean_vs_eager", block["speedup"]["vs_eager"]["geomean"]),
                                  ("geomean_vs_compile", block["speedup"]["vs_compile"]["geomean"]),
                                  ("arena_points_mean", block["arena_points_mean"]),
                                  ("gain_points_mean", block["gain_points_mean"])):
                text, v = row[column]
                if value is None:
                    assert v is None and text == "—", (name, key, column)
                else:
                    assert float(v) == pytest.approx(value), (name, key, column)
    claude = tables["agents"].row("claude")
    assert claude["geomean_vs_eager"][0] == f"{sample.summary['by_agent']['claude']['speedup']['vs_eager']['geomean']:.2f}×"
    assert claude["confined"][0] == "yes"


def test_html_task_table_lists_every_job_with_its_numbers(sample, tables):
    tasks = tables["tasks"]
    assert len(tasks.rows) == 12
    assert {"task", "category", "agent", "correct", "holdout_correct", "speedup_vs_eager", "speedup_vs_compile",
            "speedup_vs_baseline", "pct_of_roofline", "tokens", "cost_usd", "wall_s", "arena_points",
            "gain_points"} <= set(tasks.keys)
    by_key = {(r[0][0], r[3][0]): dict(zip(tasks.keys, r, strict=True)) for r in tasks.rows}
    rms = by_key["normalization/rmsnorm", "claude"]
    assert rms["speedup_vs_eager"] == ("2.40×", "2.4") or float(rms["speedup_vs_eager"][1]) == pytest.approx(2.4)
    assert rms["speedup_vs_baseline"] == ("—", None)  # torch→kernel: no baseline kernel
    assert by_key["matmul/gemm_bias_relu", "codex"]["correct"][0] == "no"
    assert by_key["reduction/softmax", "claude"]["holdout_correct"][0] == "no"


def test_html_is_self_contained_with_plots_and_sorting(page):
    # no network: the only URL is the SVG namespace
    assert set(re.findall(r"https?://[^\s\"'<>)]+", page)) == {"http://www.w3.org/2000/svg"}
    assert "<link" not in page and "<img" not in page and "@import" not in page
    assert "<script src" not in page
    assert page.count("<svg") >= 9  # strips, 2 fast_p, 2 heatmaps, quadrants, 2 per-iteration, cost
    for fig in ("speedup_distribution", "fast_p_eager", "fast_p_compile", "heatmap_geomean", "heatmap_fast_1",
                "quadrants", "iterations_rates", "iterations_best", "cost_vs_speedup"):
        assert f'id="fig-{fig}"' in page
    assert "polyline" in page and "<circle" in page and "<rect" in page
    assert (TEMPLATES / "sortable.js").read_text().strip() in page
    assert 'class="sortable"' in page and 'data-report-ready' in page
    assert "NVIDIA H100 80GB HBM3" in page and "triton" in page and "3.6.0" in page
    assert "UNCONFINED" not in page and "not timed" not in page


def test_markdown_has_the_same_tables(sample, tables):
    md = render_run(sample, "md")
    assert md.startswith("# kernellab report: h100-run")
    assert "- device: NVIDIA H100 80GB HBM3" in md and "triton 3.6.0" in md and "- confined: yes" in md
    for title in ("## Headline", "## Per-agent summary", "## Per-category summary", "## Per-kind summary",
                  "## fast_p", "## Geomean speedup vs eager (correct results), agent × category",
                  "## Generalization quadrants", "## Per iteration", "## Cost", "## Per-task results"):
        assert title in md, title
    # every cell of the HTML agent table appears in the Markdown row of that agent
    for row in tables["agents"].rows:
        line = next(x for x in md.splitlines() if x.startswith(f"| {row[0][0]} |"))
        assert [c.strip() for c in line.strip("|").split(" | ")] == [text for text, _ in row]
    assert md.count("\n| normalization/") == 4
    assert "P(holdout correct \\| seen correct)" in md  # pipes inside cells are escaped


def test_unknown_format_is_refused(sample):
    from kernellab.report import ReportError

    with pytest.raises(ReportError, match="unknown format 'pdf'"):
        render_run(sample, "pdf")
