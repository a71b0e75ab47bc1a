"""Table cells: the text a reader sees and the value a table sorts by, for every kind of number.

One rule throughout: an undefined number is never shown as 0. A correct kernel with no timing reads
"not timed" (a CPU or interpreter run); a number that cannot exist (the speed of a wrong kernel, a
rate over nothing) reads "—".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NOT_TIMED = "not timed"
MISSING = "—"


@dataclass(frozen=True)
class Cell:
    text: str
    sort: float | str | None = None  # None sorts last in either direction
    css: str = ""  # "good", "bad", "muted", "warn"
    title: str | None = None  # hover text in HTML


def text(value: Any, css: str = "") -> Cell:
    return Cell(MISSING, None, "muted") if value is None else Cell(str(value), str(value).lower(), css)


def speedup(value: float | None, *, timed: bool = True, title: str | None = None) -> Cell:
    """A speedup; ``timed=False`` when the value is missing because nothing was timed (not because
    the kernel was wrong)."""
    if value is None:
        return Cell(MISSING if timed else NOT_TIMED, None, "muted", title)
    return Cell(f"{value:.2f}×", value, "good" if value > 1 else "bad" if value < 1 else "", title)


def rate(value: float | None, *, not_timed: bool = False) -> Cell:
    """A fraction shown as a percentage (rates, fast_p)."""
    if value is None:
        return Cell(NOT_TIMED if not_timed else MISSING, None, "muted")
    return Cell(f"{100 * value:.1f}%", value)


def percent(value: float | None) -> Cell:
    """A value that already is a percentage (% of roofline)."""
    return Cell(MISSING, None, "muted") if value is None else Cell(f"{value:.1f}%", value)


def yes_no(value: bool | None, *, unknown: str = MISSING) -> Cell:
    if value is None:
        return Cell(unknown, None, "muted")
    return Cell("yes", 1, "good") if value else Cell("no", 0, "bad")


def number(value: float | None, digits: int = 1) -> Cell:
    if value is None:
        return Cell(MISSING, None, "muted")
    return Cell(f"{value:,.{digits}f}" if isinstance(value, float) else f"{value:,}", value)


def money(value: float | None) -> Cell:
    if value is None:
        return Cell(MISSING, None, "muted")
    return Cell(f"${value:,.2f}" if value >= 0.1 or value == 0 else f"${value:.4f}", value)


def seconds(value: float | None) -> Cell:
    if value is None:
        return Cell(MISSING, None, "muted")
    return Cell(f"{value:.1f} s" if value < 120 else f"{value / 60:.1f} min", value)


def delta(value: float | None) -> Cell:
    """A signed difference of speedups (B − A)."""
    if value is None:
        return Cell(MISSING, None, "muted")
    return Cell(f"{value:+.2f}×", value, "good" if value > 0 else "bad" if value < 0 else "")


def ratio(value: float | None, *, title: str | None = None) -> Cell:
    """A ratio of two speedups (B / A, or a spread ≥ 1)."""
    if value is None:
        return Cell(MISSING, None, "muted", title)
    return Cell(f"{value:.2f}×", value, "", title)


def mean_speedup(means: dict[str, Any] | None, *, timed: bool) -> Cell:
    """A summary block's geometric mean speedup, with n and the arithmetic mean on hover. ``timed``:
    whether the group had anything that could have been timed (else a missing mean is "not timed")."""
    means = means or {}
    geomean, n = means.get("geomean"), means.get("n") or 0
    if geomean is None:
        return speedup(None, timed=timed)
    mean = means.get("mean")
    title = f"geometric mean over {n} correct timed result{'s' if n != 1 else ''}"
    if mean is not None:
        title += f"; arithmetic mean {mean:.2f}×"
    return speedup(geomean, title=title)


def fast(value: float | None, *, timed: bool) -> Cell:
    """A fast_p value (None: nothing scored, or correct results of which none was timed)."""
    return rate(value, not_timed=not timed)


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 task``, ``2 tasks``, ``1 category``, ``15 categories``: counts in prose read as English."""
    if n == 1:
        return f"{n} {word}"
    if many is None:
        many = word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"
    return f"{n} {many}"
