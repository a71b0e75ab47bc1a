"""The HTML report as a reader sees it at 1400 px in headless Chromium: every table fits without a
horizontal scroll (and a reader can hide columns), every plot title is drawn at one size, and a run
without timings says once why its timing plots are missing and shows what it can. Skipped where
Chromium is not installed (Debian: ``apt-get install chromium``)."""

from __future__ import annotations

import re

import pytest
from report_browser import dump_dom, find_chromium, layout
from report_html_tables import parse_page
from report_sample_run import build_sample_run

from kernellab.report import compare_runs, load_run, render_compare, render_run

BROWSER = find_chromium()
pytestmark = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed (apt-get install chromium)")


def _page(tmp_path, name: str, html: str):
    path = tmp_path / f"{name}.html"
    path.write_text(html, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def two_categories(tmp_path_factory):
    """A run over two categories only: its heatmaps have two columns."""
    return build_sample_run(tmp_path_factory.mktemp("runs") / "two-categories",
                            tasks=("normalization/rmsnorm", "normalization/layernorm", "activation/gelu"))


@pytest.mark.parametrize("which", ["timed", "untimed", "compare"])
def test_every_table_fits_1400_px(which, sample, h200_dir, untimed_dir, tmp_path):
    html = {"timed": lambda: render_run(sample, "html"),
            "untimed": lambda: render_run(load_run(untimed_dir), "html"),
            "compare": lambda: render_compare(compare_runs(sample, load_run(h200_dir)), "html")}[which]()
    tables, _ = layout(BROWSER, _page(tmp_path, which, html), width=1400)
    assert "t-tasks" in tables or "t-pairs" in tables
    hidden = {t: px for t, (px, _) in tables.items() if px > 0}
    assert not hidden, f"columns scrolled out of sight at 1400 px: {hidden}"
    assert max(right for _, right in tables.values()) <= 1400


def test_plot_titles_are_drawn_at_one_size(two_categories, tmp_path):
    page = _page(tmp_path, "two", render_run(load_run(two_categories), "html"))
    _, titles = layout(BROWSER, page, width=1400)
    assert {"fig-heatmap_geomean", "fig-heatmap_fast_1", "fig-fast_p_eager"} <= set(titles)
    heights = set(round(h, 1) for h in titles.values())
    assert max(heights) - min(heights) < 0.5, titles  # a two-column heatmap's title was drawn ~1.6× larger


def test_a_reader_can_hide_columns(sample, tmp_path):
    page = _page(tmp_path, "run", render_run(sample, "html"))
    dom = dump_dom(BROWSER, page, "#hide=tasks:tokens,cost_usd")
    tables, body = parse_page(dom)
    assert body.get("data-report-ready") == "1" and "data-report-errors" not in body
    assert re.search(r'<table id="t-tasks"[^>]*data-hidden="tokens,cost_usd"', dom)
    hidden_cells = re.findall(r'<td[^>]*style="display: none;"', dom)
    assert len(hidden_cells) == 2 * len(tables["tasks"].column("task"))
    picker = re.search(r'<details class="columns" data-for="t-tasks">(.*?)</details>', dom, re.S).group(1)
    header = dom.split('id="t-tasks"')[1].split("</thead>")[0]
    assert picker.count('type="checkbox"') == len(re.findall(r"<th ", header))  # one per column


def test_a_run_without_timings_says_once_why_and_shows_what_it_can(untimed_dir, tmp_path):
    html = render_run(load_run(untimed_dir), "html")
    assert html.count('data-untimed-plots="1"') == 1
    assert "no GPU" in html and "left out" in html
    assert "not timed (no speedups in this run)" not in html  # no grey placeholder plots
    figures = re.findall(r'<figure id="fig-([^"]+)"', html)
    assert figures == ["heatmap_correct", "statuses", "quadrants", "iterations_rates"]
    page = _page(tmp_path, "cpu", html)
    _, body = parse_page(dump_dom(BROWSER, page))
    assert "data-report-errors" not in body
