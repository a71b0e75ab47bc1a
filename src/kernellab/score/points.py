"""The AgentKernelArena points score, and the part of it an agent actually gained.

AgentKernelArena (AMD, 2026; ``src/score.py``) scores a task as::

    0                      if it did not compile
    20                     if it compiled but is not correct
    20 + 100 + 100 × S     if it is correct, S = base_time / optimized_time

where S is measured against what the agent was handed: the original kernel in its kernel→kernel
tasks, the PyTorch reference in torch→kernel ones. An unusable S (missing, non-finite, ≤ 0, or timed
with inconsistent methods) scores 0 speed points rather than failing the task. ``arena_points``
reproduces that exactly, with S = ``Result.start_speedup`` (speedup vs the baseline kernel for
kernel→kernel, vs eager for torch→kernel), so kernellab's numbers can sit next to published ones.

Why not "speedup vs eager" everywhere: in a kernel→kernel task the starting kernel may already be
several times faster than eager, and scoring it vs eager would pay an agent for speed it was given.
Even with the correct reference the formula has a known flaw there: an agent that hands back the
baseline kernel unchanged compiles (20), is correct (100) and has S = 1 (100), i.e.
``UNCHANGED_KERNEL_POINTS`` = 220 points for doing nothing. ``gain_points`` is reported beside it:
100 × max(0, S − 1) for a correct result, 0 otherwise — only the speed gained over the starting
point, so an unchanged kernel earns 0 (and so does a torch→kernel kernel that merely matches eager).
Neither replaces fast_p and the geometric-mean speedup as kernellab's headline.

Without timings (an interpreter run) S is None: arena points stop at 120 for a correct result and
are then not comparable with GPU numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kernellab.score.records import Result
from kernellab.score.speedup import scored
from kernellab.score.stats import mean, total

COMPILE_POINTS = 20.0
CORRECT_POINTS = 100.0
SPEEDUP_POINTS = 100.0  # per unit of speedup
UNCHANGED_KERNEL_POINTS = COMPILE_POINTS + CORRECT_POINTS + SPEEDUP_POINTS * 1.0


def _usable(s: float | None) -> float | None:
    return s if s is not None and math.isfinite(s) and s > 0 else None


def arena_points(result: Result) -> float:
    """AgentKernelArena's score of one result (see the module docstring for S)."""
    if not result.compiled:
        return 0.0
    if not result.correct:
        return COMPILE_POINTS
    s = _usable(result.start_speedup)
    return COMPILE_POINTS + CORRECT_POINTS + (SPEEDUP_POINTS * s if s is not None else 0.0)


def gain_points(result: Result) -> float:
    """100 × max(0, S − 1) for a correct result, else 0: the speed gained over the starting point."""
    s = _usable(result.start_speedup)
    if not result.correct or s is None:
        return 0.0
    return SPEEDUP_POINTS * max(0.0, s - 1.0)


def points_summary(results: Sequence[Result]) -> dict:
    rs = scored(results)
    arena = [arena_points(r) for r in rs]
    gain = [gain_points(r) for r in rs]
    return {"n": len(rs), "arena_total": total(arena), "arena_mean": mean(arena),
            "gain_total": total(gain), "gain_mean": mean(gain),
            "unchanged_kernel_arena_points": UNCHANGED_KERNEL_POINTS}
