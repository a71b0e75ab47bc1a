"""The report's charts as inline SVG text: strips of speedups, line charts (fast_p curves, per-iteration
curves), heatmaps, stacked bars (generalization quadrants), scatter plots (cost vs speedup, run vs run)
and ratio bars (leaderboard). Each takes plain values and returns one ``<svg>`` element; charts with
nothing to draw return a placeholder that says why.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from kernellab.report.svg import (
    MUTED,
    Box,
    Linear,
    Log2,
    Svg,
    axes,
    legend,
    percent_label,
    placeholder,
    ratio_label,
)

WIDTH = 760


@dataclass(frozen=True)
class Series:
    label: str
    colour: str
    points: Sequence[tuple[float, float | None]]
    dash: str | None = None


@dataclass(frozen=True)
class Point:
    series: str
    x: float
    y: float
    tip: str
    hollow: bool = False


def _short(s: str, n: int = 18) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def _quantile(xs: Sequence[float], q: float) -> float:
    xs = sorted(xs)
    pos = q * (len(xs) - 1)
    lo = math.floor(pos)
    return xs[lo] + (xs[min(lo + 1, len(xs) - 1)] - xs[lo]) * (pos - lo)


def speedup_strips(title: str, groups: Mapping[str, Sequence[tuple[str, float]]], colours: Mapping[str, str],
                   empty: str = "no correct, timed result") -> str:
    """One row per group: each speedup as a dot (log scale), a box from the quartiles, the median."""
    values = [v for pts in groups.values() for _, v in pts]
    if not values:
        return placeholder(title, empty)
    svg = Svg(WIDTH, 70 + 36 * len(groups), title)
    svg.text(12, 20, title, size=13, weight="600")
    box = Box(150, 34, WIDTH - 20, 34 + 36 * len(groups))
    x = Log2.covering(values, box.left, box.right)
    axes(svg, box, xticks=x.ticks(), x=x, xfmt=ratio_label, xlabel="speedup vs eager (log scale)")
    svg.line(x(1.0), box.top, x(1.0), box.bottom, MUTED, 1.5, "4 3")
    for i, (name, pts) in enumerate(groups.items()):
        cy = box.top + 18 + 36 * i
        colour = colours.get(name, MUTED)
        svg.text(box.left - 8, cy + 4, f"{_short(name)} (n={len(pts)})", anchor="end")
        xs = [v for _, v in pts]
        if not xs:
            continue
        q1, med, q3 = (_quantile(xs, q) for q in (0.25, 0.5, 0.75))
        svg.line(x(min(xs)), cy, x(max(xs)), cy, colour, 1)
        svg.rect(x(q1), cy - 9, x(q3) - x(q1), 18, colour + "33", stroke=colour,
                 tip=f"{name}: quartiles {q1:.2f}× – {q3:.2f}×, median {med:.2f}×")
        svg.line(x(med), cy - 11, x(med), cy + 11, colour, 3)
        for j, (label, v) in enumerate(pts):
            jitter = ((j * 7919) % 9 - 4) * 1.6
            svg.circle(x(v), cy + jitter, 3.2, colour, f"{label}: {v:.2f}×", stroke="#fff", opacity=0.85)
    return svg.render()


def line_chart(title: str, series: Sequence[Series], *, xlabel: str, ylabel: str,
               ydomain: tuple[float, float] | None = None, ylog: bool = False,
               yfmt: Callable[[float], str] = percent_label, xfmt: Callable[[float], str] = lambda v: f"{v:g}",
               xref: float | None = None, markers: bool = False, empty: str = "nothing to plot") -> str:
    """Lines over a shared x axis; a None y breaks a line (undefined there, never drawn as 0)."""
    pts = [(px, py) for s in series for px, py in s.points if py is not None]
    if not pts:
        return placeholder(title, empty)
    height = 300
    svg = Svg(WIDTH, height, title)
    svg.text(12, 20, title, size=13, weight="600")
    box = Box(70, 34, WIDTH - 20, height - 80)
    xs = [px for px, _ in pts]
    x = Linear(min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1, box.left, box.right)
    ys = [py for _, py in pts]
    if ylog:
        y = Log2.covering(ys, box.bottom, box.top)
        yticks = y.ticks()
    else:
        lo, hi = ydomain or (min(ys), max(ys))
        y = Linear(lo, hi if hi > lo else lo + 1, box.bottom, box.top)
        yticks = y.ticks()
    xticks = x.ticks(8)
    if all(float(v).is_integer() for v in xs):
        xticks = [t for t in xticks if float(t).is_integer()]
    axes(svg, box, xticks=xticks, x=x, xfmt=xfmt, yticks=yticks, y=y, yfmt=yfmt, xlabel=xlabel, ylabel=ylabel)
    if xref is not None:
        svg.line(x(xref), box.top, x(xref), box.bottom, MUTED, 1.5, "4 3")
    if ylog:
        svg.line(box.left, y(1.0), box.right, y(1.0), MUTED, 1.5, "4 3")
    for s in series:
        for segment in _segments(s.points):
            svg.polyline([(x(px), y(py)) for px, py in segment], s.colour, 2, s.dash, tip=s.label)
        if markers:
            for px, py in s.points:
                if py is not None:
                    svg.circle(x(px), y(py), 3, s.colour, f"{s.label} @ {xfmt(px)}: {yfmt(py)}")
    legend(svg, [(s.label, s.colour, s.dash) for s in series], box.left, height - 32, WIDTH - 20)
    return svg.render()


def _segments(points: Sequence[tuple[float, float | None]]) -> list[list[tuple[float, float]]]:
    out: list[list[tuple[float, float]]] = [[]]
    for px, py in points:
        if py is None:
            if out[-1]:
                out.append([])
        else:
            out[-1].append((px, py))
    return [seg for seg in out if seg]


def heat_colour(value: float, kind: str) -> str:
    """Ratios diverge around 1× (red slower, green faster, saturating at 4×); fractions go white→blue."""
    if kind == "ratio":
        t = max(-1.0, min(1.0, math.log2(value) / 2))
        target = (89, 161, 79) if t > 0 else (225, 87, 89)
    else:
        t = max(0.0, min(1.0, value))
        target = (78, 121, 167)
    t = abs(t)
    r, g, b = (round(255 + (c - 255) * t) for c in target)
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap(title: str, rows: Sequence[str], cols: Sequence[str],
            cell: Callable[[str, str], tuple[float | None, str]], *, kind: str) -> str:
    """A grid of coloured cells with their values written in; missing cells are grey."""
    if not rows or not cols:
        return placeholder(title, "no results")
    # Every plot is WIDTH wide, so that the page scales them alike and their titles read at one size
    # (a narrower heatmap was scaled up to the figure's width, its title with it). Many categories get
    # narrower cells and upright column labels.
    left, ch = 150, 30
    cw = min(120, (WIDTH - left - 20) // len(cols))
    upright = cw < 64
    top = 34 + (7 * max(len(_short(c)) for c in cols) if upright else 24)
    svg = Svg(WIDTH, top + ch * len(rows) + 14, title)
    svg.text(12, 20, title, size=13, weight="600")
    for j, col in enumerate(cols):
        if upright:
            svg.text(left + cw * j + cw / 2 + 4, top - 6, _short(col), size=10, rotate=True)
        else:
            svg.text(left + cw * j + cw / 2, top - 8, _short(col, cw // 7), size=10, anchor="middle")
    for i, row in enumerate(rows):
        svg.text(left - 8, top + ch * i + ch / 2 + 4, _short(row), anchor="end")
        for j, col in enumerate(cols):
            value, label = cell(row, col)
            ok = value is not None and (kind != "ratio" or value > 0)
            fill = heat_colour(value, kind) if ok else "#f0f0f0"
            svg.rect(left + cw * j + 1, top + ch * i + 1, cw - 2, ch - 2, fill, f"{row} × {col}: {label}")
            svg.text(left + cw * j + cw / 2, top + ch * i + ch / 2 + 4, label, size=10, anchor="middle",
                     fill="#222" if ok else MUTED)
    return svg.render()


def stacked_bars(title: str, groups: Sequence[tuple[str, Mapping[str, float | None]]],
                 segments: Sequence[tuple[str, str, str]], counts: Mapping[tuple[str, str], int] | None = None) -> str:
    """One 100% bar per group; ``segments`` are (key, label, colour), values are fractions."""
    if not groups or all(not any(v for v in g.values()) for _, g in groups):
        return placeholder(title, "no scored results")
    height = 48 + 30 * len(groups) + 24 * math.ceil(len(segments) / 3) + 10
    svg = Svg(WIDTH, height, title)
    svg.text(12, 20, title, size=13, weight="600")
    box = Box(150, 34, WIDTH - 20, 34 + 30 * len(groups))
    x = Linear(0.0, 1.0, box.left, box.right)
    for i, (name, fractions) in enumerate(groups):
        y0 = box.top + 30 * i + 4
        svg.text(box.left - 8, y0 + 15, _short(name), anchor="end")
        acc = 0.0
        for key, label, colour in segments:
            f = fractions.get(key) or 0.0
            if f > 0:
                n = (counts or {}).get((name, key))
                tip = f"{name}: {label} {100 * f:.1f}%" + (f" ({n})" if n is not None else "")
                svg.rect(x(acc), y0, x(acc + f) - x(acc), 22, colour, tip)
                if x(acc + f) - x(acc) > 34:
                    svg.text((x(acc) + x(acc + f)) / 2, y0 + 15, f"{100 * f:.0f}%", size=10, anchor="middle",
                             fill="#fff")
            acc += f
    legend(svg, [(label, colour, None) for _, label, colour in segments], box.left, box.bottom + 22, WIDTH - 20)
    return svg.render()


def scatter(title: str, points: Sequence[Point], colours: Mapping[str, str], *, xlabel: str, ylabel: str,
            xlog: bool = False, diagonal: bool = False, empty: str = "nothing to plot") -> str:
    """Dots (hollow ones for a second kind, e.g. wrong kernels); y is a log2 ratio scale."""
    if not points:
        return placeholder(title, empty)
    height = 340
    svg = Svg(WIDTH, height, title)
    svg.text(12, 20, title, size=13, weight="600")
    box = Box(70, 34, WIDTH - 20, height - 80)
    ys = [p.y for p in points]
    y = Log2.covering(ys, box.bottom, box.top)
    x: Linear | Log2
    if xlog:
        xs = [p.x for p in points]
        x = Log2.covering(xs, box.left, box.right)
        if diagonal:  # one scale for both axes, so the diagonal means "equal"
            both = Log2.covering(xs + ys, 0, 1)
            x, y = Log2(both.lo, both.hi, box.left, box.right), Log2(both.lo, both.hi, box.bottom, box.top)
        xticks, xfmt = x.ticks(), ratio_label
    else:
        xs = [p.x for p in points]
        x = Linear(0.0, max(xs) * 1.05 or 1.0, box.left, box.right)
        xticks, xfmt = x.ticks(6), _compact
    axes(svg, box, xticks=xticks, x=x, xfmt=xfmt, yticks=y.ticks(), y=y, yfmt=ratio_label, xlabel=xlabel,
         ylabel=ylabel)
    svg.line(box.left, y(1.0), box.right, y(1.0), MUTED, 1.5, "4 3")
    if diagonal:
        svg.line(x(x.lo), y(x.lo), x(x.hi), y(x.hi), MUTED, 1, "2 3")
    for p in points:
        colour = colours.get(p.series, MUTED)
        svg.circle(x(p.x), y(p.y), 4.5, "#fff" if p.hollow else colour, p.tip, stroke=colour, opacity=0.9)
    series = list(dict.fromkeys(p.series for p in points))
    legend(svg, [(s, colours.get(s, MUTED), None) for s in series], box.left, height - 32, WIDTH - 20)
    return svg.render()


def _compact(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


def ratio_bars(title: str, items: Sequence[tuple[str, float | None, str]], *, xlabel: str,
               missing: str = "not timed") -> str:
    """Horizontal bars from 1× to each value on a log scale (left of 1× is slower)."""
    values = [v for _, v, _ in items if v is not None and v > 0]
    if not items:
        return placeholder(title, "no agents")
    svg = Svg(WIDTH, 76 + 28 * len(items), title)
    svg.text(12, 20, title, size=13, weight="600")
    box = Box(150, 34, WIDTH - 60, 34 + 28 * len(items))
    x = Log2.covering(values, box.left, box.right)
    axes(svg, box, xticks=x.ticks(), x=x, xfmt=ratio_label, xlabel=xlabel)
    for i, (name, v, colour) in enumerate(items):
        yc = box.top + 28 * i + 14
        svg.text(box.left - 8, yc + 4, _short(name), anchor="end")
        if v is None or v <= 0:
            svg.text(x(1.0) + 6, yc + 4, missing, size=10, fill=MUTED)
            continue
        x0, x1 = sorted((x(1.0), x(v)))
        svg.rect(x0, yc - 9, max(x1 - x0, 1), 18, colour, f"{name}: {v:.2f}×")
        svg.text(x1 + 4, yc + 4, f"{v:.2f}×", size=10)
    svg.line(x(1.0), box.top, x(1.0), box.bottom, MUTED, 1.5, "4 3")
    return svg.render()
