"""The HTML report in a real browser (headless Chromium): it draws, its script runs without errors,
and its tables sort. Skipped where Chromium is not installed (Debian: ``apt-get install chromium``)."""

from __future__ import annotations

import numpy as np
import pytest
from report_browser import dump_dom, find_chromium, screenshot
from report_html_tables import parse_page
from report_png import decode_png

from kernellab.report import (
    build_leaderboard,
    compare_runs,
    load_run,
    render_compare,
    render_leaderboard,
    render_run,
)
from kernellab.report.svg import PALETTE

BROWSER = find_chromium()
pytestmark = pytest.mark.skipif(BROWSER is None, reason="chromium is not installed (apt-get install chromium)")


@pytest.fixture(scope="module")
def page(sample, tmp_path_factory):
    path = tmp_path_factory.mktemp("html") / "report.html"
    path.write_text(render_run(sample, "html"), encoding="utf-8")
    return path


def rgb(hex_colour: str) -> list[int]:
    return [int(hex_colour[i:i + 2], 16) for i in (1, 3, 5)]


def test_screenshot_shows_the_page_and_its_plots(page, tmp_path):
    png = screenshot(BROWSER, page, tmp_path / "shot.png", size=(1400, 2000))
    pixels = decode_png(png)[..., :3]
    assert pixels.shape[:2] == (2000, 1400)
    assert pixels.std() > 10  # not a blank page
    assert len(np.unique(pixels.reshape(-1, 3), axis=0)) > 100  # text, tables and plots, not a flat fill
    for agent_colour in PALETTE[:2]:  # the two agents' plot colours are drawn
        assert np.all(pixels == rgb(agent_colour), axis=2).sum() > 500, agent_colour


def test_script_runs_and_every_table_is_sortable(page):
    source = page.read_text()
    _, body = parse_page(dump_dom(BROWSER, page))
    assert body.get("data-report-ready") == "1"
    assert "data-report-errors" not in body
    assert body.get("data-sortable-tables") == str(source.count('class="sortable"'))


@pytest.mark.parametrize("table, key, direction", [("tasks", "speedup_vs_eager", "asc"),
                                                    ("tasks", "speedup_vs_eager", "desc"),
                                                    ("tasks", "task", "desc"),
                                                    ("agents", "correct_rate", "asc")])
def test_tables_sort_in_the_browser(page, table, key, direction):
    tables, body = parse_page(dump_dom(BROWSER, page, f"#sort={table}:{key}:{direction}"))
    assert "data-report-errors" not in body
    t = tables[table]
    assert t.sort == {key: "ascending" if direction == "asc" else "descending"}
    values = [v for _, v in t.column(key)]
    present = [v for v in values if v is not None]
    assert values == present + [None] * (len(values) - len(present))  # empty cells last either way
    numeric = key != "task"
    order = [float(v) for v in present] if numeric else present
    assert order == sorted(order, reverse=direction == "desc")
    assert len(set(order)) > 1


def test_compare_leaderboard_and_untimed_pages_run_cleanly(sample, h200_dir, untimed_dir, tmp_path):
    h200 = load_run(h200_dir)
    pages = {"compare": render_compare(compare_runs(sample, h200), "html"),
             "leaderboard": render_leaderboard(build_leaderboard([sample, h200]), "html"),
             "run": render_run(load_run(untimed_dir), "html")}
    for kind, html in pages.items():
        path = tmp_path / f"{kind}.html"
        path.write_text(html, encoding="utf-8")
        _, body = parse_page(dump_dom(BROWSER, path))
        assert body.get("data-report") == kind
        assert body.get("data-report-ready") == "1" and "data-report-errors" not in body, kind
