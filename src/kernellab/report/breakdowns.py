"""Per-agent views the summary does not hold (it groups by agent *or* by category, never both), made
with the score layer's own functions so every number means what docs/scoring.md says.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernellab.score import cost_summary, fast_p_curve, per_iteration, quadrants
from kernellab.score.jsonable import json_ready
from kernellab.score.records import AttemptPoint, Result
from kernellab.score.summary import block, group_by


def agent_of(point: AttemptPoint) -> str:
    """The agent of an attempt point (its job key is ``task|agent|seed|strategy``)."""
    parts = point.job.split("|")
    return parts[1] if len(parts) == 4 else point.job


def breakdowns(results: Sequence[Result], points: Sequence[AttemptPoint]) -> dict[str, Any]:
    """``agent_category`` (a summary block per agent × category), and per agent: its ``fast_p`` curves,
    generalization quadrants, cost and per-iteration rows."""
    by_agent = group_by(results, lambda r: r.agent)
    points_by_agent: dict[str, list[AttemptPoint]] = {}
    for p in points:
        points_by_agent.setdefault(agent_of(p), []).append(p)
    return json_ready({
        "agent_category": {agent: {cat: block(rs) for cat, rs in group_by(agent_rs, lambda r: r.category).items()}
                           for agent, agent_rs in by_agent.items()},
        "fast_p_curve_by_agent": {agent: {f"vs_{vs}": [[p, v] for p, v in fast_p_curve(rs, vs)]
                                          for vs in ("eager", "compile")} for agent, rs in by_agent.items()},
        "quadrants_by_agent": {agent: quadrants(rs) for agent, rs in by_agent.items()},
        "cost_by_agent": {agent: cost_summary(rs) for agent, rs in by_agent.items()},
        "per_iteration_by_agent": {agent: per_iteration(ps) for agent, ps in sorted(points_by_agent.items())},
    })
