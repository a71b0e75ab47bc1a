"""The order in which the search tries launch-parameter changes of one kernel file.

First what worked last time (the direction of the last kept change, one step further), then joint
presets that are known to be good starting points (GEMM tile configurations for ``tl.dot`` kernels,
larger blocks with more warps for streaming kernels), then single-knob steps up and down
(coordinate descent around the kernel in hand). Ties are broken by a seeded shuffle, so a seed
gives one deterministic order.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass

from kernellab.agents.search.params import Knob, apply_values, describe

# GEMM tiles (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages), the ones that fit float32 operands in
# an H100's 228 KB of shared memory first ((BM + BN) * BK * 4 bytes * stages); the last needs 16-bit.
GEMM_PRESETS = [(128, 128, 32, 4, 3), (128, 64, 32, 4, 4), (64, 128, 32, 4, 4), (128, 128, 32, 8, 4),
                (64, 64, 32, 4, 4), (128, 256, 32, 8, 3), (64, 64, 64, 4, 3), (128, 128, 64, 8, 3)]


@dataclass(frozen=True)
class Variant:
    source: str
    values: tuple[tuple[str, int], ...]
    description: str


@dataclass(frozen=True)
class Hint:
    """The last change that was kept: (knob name, old value, new value) triples."""

    changes: tuple[tuple[str, int, int], ...]


def variants(source: str, knobs: list[Knob], seed: int = 0, hint: Hint | None = None) -> list[Variant]:
    """Every candidate rewrite of ``source``, best guesses first, without duplicates."""
    seen = {source}
    out = []
    for move in moves(knobs, seed, hint):
        text = apply_values(source, knobs, move)
        if text in seen:
            continue
        seen.add(text)
        out.append(Variant(text, tuple(sorted(move.items())), describe(knobs, move)))
    return out


def moves(knobs: list[Knob], seed: int = 0, hint: Hint | None = None) -> list[dict[str, int]]:
    tunable = [k for k in knobs if k.tunable]
    by_name = {k.name: k for k in tunable}
    ordered: list[dict[str, int]] = []
    if hint:
        follow = {}
        for name, old, new in hint.changes:
            knob = by_name.get(name)
            if knob is None or old == new:
                continue
            lower, higher = knob.steps()
            step = higher if new > old else lower
            if step is not None:
                follow[name] = step
        if follow:
            ordered.append(follow)
    ordered += _gemm_presets(tunable) + _stream_presets(tunable)
    rng = random.Random(seed)
    classes: dict[int, list[dict[str, int]]] = {}
    for knob in tunable:
        lower, higher = knob.steps()
        rank = {"block": 0, "constant": 0, "warps": 1, "stages": 2, "group": 3}.get(knob.kind, 4)
        if not knob.present:
            steps = [v for v in (8, 2) if v in knob.domain] if knob.kind == "warps" else \
                [v for v in (4, 2) if v in knob.domain]
        else:
            steps = [v for v in (higher, lower) if v is not None]
        classes.setdefault(rank, []).extend({knob.name: v} for v in steps)
    for rank in sorted(classes):
        group = classes[rank]
        rng.shuffle(group)
        ordered += group
    unique, keys = [], set()
    for move in ordered:
        # setting an absent launch option to Triton's own default changes nothing: leave it out
        move = {n: v for n, v in move.items() if by_name[n].present or v != by_name[n].value}
        key = tuple(sorted(move.items()))
        if move and key not in keys and any(v != by_name[n].value or not by_name[n].present for n, v in move.items()):
            keys.add(key)
            unique.append(move)
    return unique


def _gemm_presets(knobs: list[Knob]) -> list[dict[str, int]]:
    """Curated tiles for each ``tl.dot`` launch, and for template constants named BLOCK_M/N/K."""
    presets = []
    kernels = {k.kernel for k in knobs if k.dot and k.kernel}
    groups: list[dict[str, Knob]] = []
    for kernel in sorted(kernels):
        mine = [k for k in knobs if k.kernel == kernel]
        tiles = sorted((k for k in mine if k.kind == "block" and k.role == "tile"), key=lambda k: (min(k.axes, default=9), k.name))
        loops = [k for k in mine if k.kind == "block" and k.role == "loop"]
        role = {}
        if len(tiles) == 1:
            role["m"] = tiles[0]
        elif len(tiles) >= 2:
            role["m"], role["n"] = _m_and_n(tiles)
        if len(loops) == 1:
            role["k"] = loops[0]
        for k in mine:
            if k.kind in ("warps", "stages"):
                role[k.kind] = k
        if "m" in role:
            groups.append(role)
    constants = {k.name: k for k in knobs if k.kind == "constant" or (not k.kernel and k.kind in ("warps", "stages"))}
    for suffix in sorted({m.group(2) for n in constants if (m := re.fullmatch(r"BLOCK_(M|N|K)(\w*)", n))}):
        role = {key: constants[f"{prefix}{suffix}"] for key, prefix in
                (("m", "BLOCK_M"), ("n", "BLOCK_N"), ("k", "BLOCK_K"), ("warps", "NUM_WARPS"), ("stages", "NUM_STAGES"))
                if f"{prefix}{suffix}" in constants}
        if "m" in role and "n" in role:
            groups.append(role)
    for role in groups:
        for bm, bn, bk, warps, stages in GEMM_PRESETS:
            move = {}
            for key, value in (("m", bm), ("n", bn), ("k", bk), ("warps", warps), ("stages", stages)):
                knob = role.get(key)
                if knob is not None and value in knob.domain:
                    move[knob.name] = value
            if "n" not in role and bm != bn:
                continue  # one knob tiles both dimensions: square tiles only
            if move:
                presets.append(move)
    return presets


def _m_and_n(tiles: list[Knob]) -> tuple[Knob, Knob]:
    m = next((k for k in tiles if k.label.upper().endswith("M")), None)
    n = next((k for k in tiles if k.label.upper().endswith("N")), None)
    if m is not None and n is not None and m is not n:
        return m, n
    return tiles[0], tiles[1]


def _stream_presets(knobs: list[Knob]) -> list[dict[str, int]]:
    """Bigger blocks with more warps for launches of one non-dot block size (elementwise, row loops)."""
    presets = []
    for kernel in sorted({k.kernel for k in knobs if k.kernel and not k.dot}):
        mine = [k for k in knobs if k.kernel == kernel]
        blocks = [k for k in mine if k.kind == "block"]
        warps = next((k for k in mine if k.kind == "warps"), None)
        if len(blocks) != 1:
            continue
        block = blocks[0]
        for factor in (4, 2, 8):
            value = block.value * factor
            if value not in block.domain:
                continue
            move = {block.name: value}
            if warps is not None:
                want = 4 if value <= 1024 else 8 if value <= 4096 else 16
                if want in warps.domain:
                    move[warps.name] = want
            presets.append(move)
    return presets
