"""A small SVG writer for report plots: a canvas, linear and log scales with readable ticks, axes and
legends. Plots are written as inline SVG text so a report needs no plotting library, no network and
no image files, stays sharp at any zoom, and its marks carry hover titles (``<title>``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import escape

# Tableau 10: distinguishable, and readable by most colour-blind readers.
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
           "#9c755f", "#bab0ac")
INK, GRID, MUTED = "#222", "#e3e3e3", "#777"
FONT = "system-ui, -apple-system, 'Segoe UI', sans-serif"


def colours_for(names: Sequence[str]) -> dict[str, str]:
    return {name: PALETTE[i % len(PALETTE)] for i, name in enumerate(names)}


def _attrs(**kw: object) -> str:
    return "".join(f' {k.rstrip("_").replace("_", "-")}="{escape(str(v))}"' for k, v in kw.items() if v is not None)


@dataclass
class Svg:
    width: int
    height: int
    title: str
    parts: list[str] = field(default_factory=list)

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = INK, width: float = 1,
             dash: str | None = None) -> None:
        attrs = _attrs(x1=_n(x1), y1=_n(y1), x2=_n(x2), y2=_n(y2), stroke=stroke, stroke_width=width,
                       stroke_dasharray=dash)
        self.parts.append(f"<line{attrs}/>")

    def rect(self, x: float, y: float, w: float, h: float, fill: str, tip: str | None = None,
             stroke: str | None = None) -> None:
        self._shape("rect", tip, x=_n(x), y=_n(y), width=_n(max(w, 0)), height=_n(max(h, 0)), fill=fill,
                    stroke=stroke)

    def circle(self, cx: float, cy: float, r: float, fill: str, tip: str | None = None, stroke: str | None = None,
               opacity: float | None = None) -> None:
        self._shape("circle", tip, cx=_n(cx), cy=_n(cy), r=r, fill=fill, stroke=stroke, fill_opacity=opacity)

    def polyline(self, points: Sequence[tuple[float, float]], stroke: str, width: float = 2,
                 dash: str | None = None, tip: str | None = None) -> None:
        pts = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
        self._shape("polyline", tip, points=pts, fill="none", stroke=stroke, stroke_width=width,
                    stroke_dasharray=dash, stroke_linejoin="round")

    def text(self, x: float, y: float, s: str, size: int = 11, anchor: str = "start", fill: str = INK,
             weight: str | None = None, rotate: bool = False) -> None:
        transform = f"rotate(-90 {_n(x)} {_n(y)})" if rotate else None
        attrs = _attrs(x=_n(x), y=_n(y), font_size=size, text_anchor=anchor, fill=fill, font_weight=weight,
                       transform=transform)
        self.parts.append(f"<text{attrs}>{escape(s)}</text>")

    def _shape(self, tag: str, tip: str | None, **kw: object) -> None:
        if tip:
            self.parts.append(f"<{tag}{_attrs(**kw)}><title>{escape(tip)}</title></{tag}>")
        else:
            self.parts.append(f"<{tag}{_attrs(**kw)}/>")

    def render(self) -> str:
        body = "".join(self.parts)
        return (f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" viewBox="0 0 {self.width} {self.height}" '
                f'width="{self.width}" height="{self.height}" role="img" aria-label="{escape(self.title)}" '
                f'font-family="{escape(FONT)}"><title>{escape(self.title)}</title>{body}</svg>')


def _n(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".")


@dataclass(frozen=True)
class Box:
    """The plotting area inside a canvas."""

    left: float
    top: float
    right: float
    bottom: float

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def height(self) -> float:
        return self.bottom - self.top


@dataclass(frozen=True)
class Linear:
    lo: float
    hi: float
    a: float  # pixel of lo
    b: float  # pixel of hi

    def __call__(self, v: float) -> float:
        span = self.hi - self.lo or 1.0
        return self.a + (min(max(v, self.lo), self.hi) - self.lo) / span * (self.b - self.a)

    def ticks(self, n: int = 5) -> list[float]:
        return nice_ticks(self.lo, self.hi, n)


@dataclass(frozen=True)
class Log2:
    """A log scale for ratios: ticks at powers of two, 1× in the middle of a symmetric domain."""

    lo: float
    hi: float
    a: float
    b: float

    @classmethod
    def covering(cls, values: Sequence[float], a: float, b: float) -> Log2:
        xs = [v for v in values if v > 0 and math.isfinite(v)] or [1.0]
        lo = 2.0 ** math.floor(math.log2(min(min(xs), 0.5)))
        hi = 2.0 ** math.ceil(math.log2(max(max(xs), 2.0)))
        return cls(lo, hi, a, b)

    def __call__(self, v: float) -> float:
        v = min(max(v, self.lo), self.hi)
        return self.a + (math.log2(v) - math.log2(self.lo)) / (math.log2(self.hi) - math.log2(self.lo)) * (self.b - self.a)

    def ticks(self) -> list[float]:
        lo, hi = round(math.log2(self.lo)), round(math.log2(self.hi))
        step = max(1, math.ceil((hi - lo) / 8))
        return [2.0 ** e for e in range(lo, hi + 1, step)]


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def ratio_label(v: float) -> str:
    return f"{v:g}×"


def percent_label(v: float) -> str:
    return f"{100 * v:.0f}%"


def axes(svg: Svg, box: Box, *, xticks: Sequence[float] = (), x: Callable[[float], float] | None = None,
         xfmt: Callable[[float], str] = str, yticks: Sequence[float] = (), y: Callable[[float], float] | None = None,
         yfmt: Callable[[float], str] = str, xlabel: str = "", ylabel: str = "") -> None:
    """Grid lines, tick labels and axis titles around ``box``."""
    if y is not None:
        for t in yticks:
            svg.line(box.left, y(t), box.right, y(t), GRID)
            svg.text(box.left - 6, y(t) + 4, yfmt(t), size=10, anchor="end", fill=MUTED)
    if x is not None:
        for t in xticks:
            svg.line(x(t), box.top, x(t), box.bottom, GRID)
            svg.text(x(t), box.bottom + 14, xfmt(t), size=10, anchor="middle", fill=MUTED)
    svg.line(box.left, box.bottom, box.right, box.bottom, MUTED)
    svg.line(box.left, box.top, box.left, box.bottom, MUTED)
    if xlabel:
        svg.text((box.left + box.right) / 2, box.bottom + 32, xlabel, anchor="middle")
    if ylabel:
        svg.text(box.left - 44, (box.top + box.bottom) / 2, ylabel, anchor="middle", rotate=True)


def legend(svg: Svg, items: Sequence[tuple[str, str, str | None]], x: float, y: float, max_x: float) -> float:
    """Swatches and labels in rows from (x, y); items are (label, colour, dash). Returns the y below."""
    cx, cy = x, y
    for label, colour, dash in items:
        w = 28 + 6.5 * len(label)
        if cx + w > max_x and cx > x:
            cx, cy = x, cy + 16
        svg.line(cx, cy - 4, cx + 18, cy - 4, colour, 3, dash)
        svg.text(cx + 22, cy, label, size=10)
        cx += w + 10
    return cy + 16


def placeholder(title: str, message: str, width: int = 760, height: int = 110) -> str:
    """A plot that has nothing to show says why, in the place the plot would be."""
    svg = Svg(width, height, f"{title}: {message}")
    svg.text(12, 20, title, size=13, weight="600")
    svg.rect(12, 34, width - 24, height - 46, "#f6f6f6", stroke=GRID)
    svg.text(width / 2, 34 + (height - 46) / 2 + 4, message, anchor="middle", fill=MUTED)
    return svg.render()
