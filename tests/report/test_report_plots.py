"""The inline-SVG charts: scales, undefined values, empty data, escaping."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from kernellab.report import plots
from kernellab.report.plots import Point, Series
from kernellab.report.svg import Linear, Log2, nice_ticks

NS = "{http://www.w3.org/2000/svg}"


def parse(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # well-formed XML, or this raises
    assert root.tag == f"{NS}svg" and root.get("role") == "img"
    return root


def test_scales_and_ticks():
    assert nice_ticks(0, 1, 5) == [0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 4, 8) == [0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4]
    log = Log2.covering([0.8, 3.1], 0, 300)
    assert (log.lo, log.hi) == (0.5, 4.0) and log.ticks() == [0.5, 1, 2, 4]
    assert log(1.0) == pytest.approx(100) and log(100) == 300  # clamped to the domain
    assert Linear(0, 1, 10, 110)(0.25) == 35


def test_a_missing_value_breaks_a_line_instead_of_dropping_to_zero():
    svg = plots.line_chart("t", [Series("a", "#000", [(0, 0.5), (1, None), (2, 0.4), (3, 0.3)])], xlabel="x",
                           ylabel="y", ydomain=(0, 1))
    lines = parse(svg).findall(f"{NS}polyline")
    assert [len(pl.get("points").split()) for pl in lines] == [1, 2]


def test_charts_with_nothing_to_draw_say_why():
    for svg in (plots.speedup_strips("s", {"a": []}, {}, "not timed (no speedups in this run)"),
                plots.line_chart("l", [Series("a", "#000", [(0, None)])], xlabel="", ylabel="",
                                 empty="not timed (no speedups in this run)"),
                plots.scatter("c", [], {}, xlabel="", ylabel="", empty="not timed (no speedups in this run)")):
        assert "not timed (no speedups in this run)" in svg and parse(svg) is not None
    assert "no results" in plots.heatmap("h", [], [], lambda r, c: (None, ""), kind="ratio")


def test_strips_heatmap_bars_and_scatter_draw_their_marks():
    svg = plots.speedup_strips("s", {"a": [("t1", 1.5), ("t2", 0.7), ("t3", 3.0)], "b": [("t1", 2.0)]},
                               {"a": "#111111", "b": "#222222"})
    root = parse(svg)
    assert len(root.findall(f"{NS}circle")) == 4 and "t3: 3.00×" in svg and "a (n=3)" in svg
    heat = plots.heatmap("h", ["a"], ["x", "y"], lambda r, c: (2.0, "2.00×") if c == "x" else (None, "—"),
                         kind="ratio")
    fills = [r.get("fill") for r in parse(heat).findall(f"{NS}rect")]
    assert fills == [plots.heat_colour(2.0, "ratio"), "#f0f0f0"]
    assert plots.heat_colour(1.0, "ratio") == "#ffffff" and plots.heat_colour(0.0, "fraction") == "#ffffff"
    bars = plots.stacked_bars("q", [("a", {"k1": 0.25, "k2": 0.75})], [("k1", "one", "#111"), ("k2", "two", "#222")])
    widths = [float(r.get("width")) for r in parse(bars).findall(f"{NS}rect")]
    assert widths[1] == pytest.approx(3 * widths[0], rel=0.02)
    sc = plots.scatter("c", [Point("a", 1.0, 2.0, "t1"), Point("a", 2.0, 1.0, "t2", hollow=True)], {"a": "#333"},
                       xlabel="x", ylabel="y", xlog=True, diagonal=True)
    assert len(parse(sc).findall(f"{NS}circle")) == 2
    rb = plots.ratio_bars("r", [("a", 2.0, "#111"), ("b", None, "#222"), ("c", 0.5, "#333")], xlabel="x")
    assert "not timed" in rb and len(parse(rb).findall(f"{NS}rect")) == 2


def test_labels_are_escaped():
    svg = plots.speedup_strips("<b>", {"<script>x</script>": [("t & u", 1.2)]}, {})
    parse(svg)
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "t &amp; u" in svg
    assert not re.search(r"<(?!/?(svg|title|text|line|rect|circle|polyline)\b)", svg)
