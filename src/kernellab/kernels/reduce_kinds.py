"""The reductions a tiled reduction kernel can carry, as code snippets for the row and column templates.

A kernel keeps a ``[BLOCK_R, BLOCK_C]`` fp32 accumulator (two for variance and arg-extremes), walks the
reduced dimension, then reduces the tile along it to one value per output (``p1``, and ``p2`` where a
kind needs two). When the reduced dimension is split over programs, each segment's ``p1``/``p2`` is a
partial, and a second kernel merges the partials in a fixed order (deterministic) before ``finish``
turns them into the result ``r``.

- ``sum``/``mean``/``count`` (a comparison summed as 0/1, an int64 result), ``amax``/``amin``.
- ``var``/``std`` with a Bessel ``correction``: sums of ``d`` and ``d²`` with ``d = x - x_first``, the
  first element along the reduced dimension, combined as ``(Σd² - (Σd)²/n) / (n - correction)``. The shift
  keeps the sums small for data far from zero, and a constant row or column gives exactly zero.
- ``argmax``/``argmin``: a value and an int32 index per accumulator lane, taken only on a strict
  improvement, then the smallest index among the lanes that hold the extreme: the first occurrence.

Snippet placeholders: ``{AX}`` the reduced axis of the tile, ``{E}`` the indexing that broadcasts a
per-output vector over the tile, ``{IDX}`` the tile's index along the reduced dimension, ``{FIRST}``
the offsets of each output's first element, ``{z}`` the value being reduced.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    name: str
    init: str  # before the loop
    update: str  # in the loop, for the value ``{z}``
    segment: str  # after the loop: p1 (, p2) from the tile
    start: str  # the merge's starting p1 (, p2), vectors of BLOCK_O
    merge: str  # p1 (, p2) merged with one segment's q1 (, q2)
    finish: str  # r from p1 (, p2) and n_red
    two: bool = False  # a second partial (p2)
    index: bool = False  # p2 and the result are indices (int32 partials, an int64 result)
    integer: bool = False  # the result is int64 (counts, indices)
    differentiable: bool = False


_ZEROS = "tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.float32)"


def _extreme(name: str, fn: str, init: str) -> Kind:
    return Kind(name, init=f'acc = tl.full([BLOCK_R, BLOCK_C], float("{init}"), tl.float32)',
                update=f'acc = tl.{fn}imum(acc, tl.where(mask, {{z}}, float("{init}")))',
                segment=f"p1 = tl.{fn}(acc, axis={{AX}})",
                start=f'p1 = tl.full([BLOCK_O], float("{init}"), tl.float32)',
                merge=f"p1 = tl.{fn}imum(p1, q1)", finish="r = p1")


def _statistic(name: str, correction: int) -> Kind:
    value = f"tl.maximum(p2 - p1 * p1 / n_red, 0.0) / (n_red - {float(correction)!r})"
    return Kind(name, two=True,
                init="shift = tl.load(x_ptr + {FIRST}, mask=omask, other=0.0).to(tl.float32)\n"
                     f"acc = {_ZEROS}\nacc2 = {_ZEROS}",
                update="d = tl.where(mask, {z} - shift{E}, 0.0)\nacc += d\nacc2 += d * d",
                segment="p1 = tl.sum(acc, axis={AX})\np2 = tl.sum(acc2, axis={AX})",
                start="p1 = tl.zeros([BLOCK_O], dtype=tl.float32)\np2 = tl.zeros([BLOCK_O], dtype=tl.float32)",
                merge="p1 += q1\np2 += q2",
                finish=f"r = {value}" if name == "var" else f"r = tl.sqrt({value})")


def _arg(name: str) -> Kind:
    init, cmp, fn = ("-inf", ">", "max") if name == "argmax" else ("inf", "<", "min")
    return Kind(name, two=True, index=True, integer=True,
                init=f'accv = tl.full([BLOCK_R, BLOCK_C], float("{init}"), tl.float32)\n'
                     "acci = tl.zeros([BLOCK_R, BLOCK_C], dtype=tl.int32)",
                update=f'zz = tl.where(mask, {{z}}, float("{init}"))\ntake = zz {cmp} accv\n'
                       "accv = tl.where(take, zz, accv)\nacci = tl.where(take, {IDX}, acci)",
                segment=f"p1 = tl.{fn}(accv, axis={{AX}})\n"
                        "p2 = tl.min(tl.where(accv == p1{E}, acci, 2147483647), axis={AX})",
                start=f'p1 = tl.full([BLOCK_O], float("{init}"), tl.float32)\n'
                      "p2 = tl.zeros([BLOCK_O], dtype=tl.int32)",
                merge=f"take = q1 {cmp} p1\np1 = tl.where(take, q1, p1)\np2 = tl.where(take, q2, p2)",
                finish="r = p2")


def kind(name: str, correction: int = 1) -> Kind:
    """The snippets of one reduction (``correction``: the Bessel correction of ``var``/``std``)."""
    if name in ("sum", "mean", "count"):
        return Kind(name, init=f"acc = {_ZEROS}", update="acc += tl.where(mask, {z}, 0.0)",
                    segment="p1 = tl.sum(acc, axis={AX})", start="p1 = tl.zeros([BLOCK_O], dtype=tl.float32)",
                    merge="p1 += q1", finish="r = p1 / n_red" if name == "mean" else "r = p1",
                    integer=name == "count", differentiable=name != "count")
    if name in ("amax", "amin"):
        return _extreme(name, name[1:], "-inf" if name == "amax" else "inf")
    if name in ("var", "std"):
        return _statistic(name, correction)
    if name in ("argmax", "argmin"):
        return _arg(name)
    raise ValueError(name)


KINDS = ("sum", "mean", "amax", "amin", "var", "std", "argmax", "argmin")


def fill(snippet: str, indent: str, *, axis: int, z: str = "x") -> str:
    """A snippet for reducing along ``axis`` of the tile (1: rows' columns, 0: columns' rows), indented."""
    values = {"AX": str(axis), "E": "[:, None]" if axis == 1 else "[None, :]",
              "IDX": "cols[None, :]" if axis == 1 else "rows[:, None]",
              "FIRST": "rows.to(tl.int64) * n_cols" if axis == 1 else "cols", "z": z}
    text = snippet
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return "\n".join(indent + line for line in text.split("\n"))
