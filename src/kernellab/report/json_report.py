"""The JSON forms: the score layer's ``summarize()`` document plus per-task rows, under stable keys.

Run report::

    {"schema": 1, "report": "run", "run": {run_dir, name, devices, modes, versions, confined, timed, runs},
     "summary": summarize(results, attempts), "breakdowns": {agent_category, fast_p_curve_by_agent,
     quadrants_by_agent, cost_by_agent, per_iteration_by_agent}, "tasks": [TaskRow, ...]}

Comparison: ``{"schema", "report": "compare", "a": run report, "b": run report, "matched_on", "pairs",
"only_a", "only_b", "cross_device", "hardware_spread"}``. Leaderboard: ``{"schema", "report":
"leaderboard", "ranked_by", "devices", "sources", "standings", "summary"}``. Undefined numbers are null.
"""

from __future__ import annotations

import json
from typing import Any

from kernellab.report.compare import CompareReport
from kernellab.report.fleet import campaign_fleet
from kernellab.report.leaderboard import CRITERIA, Leaderboard
from kernellab.report.model import REPORT_SCHEMA, RunReport
from kernellab.score.jsonable import json_ready


def run_document(report: RunReport) -> dict[str, Any]:
    fleet = campaign_fleet(report.run_dir)  # a campaign's nodes, rate and failures by kind
    return json_ready({"schema": REPORT_SCHEMA, "report": "run", "run": report.meta(), "summary": report.summary,
                       "breakdowns": report.breakdowns, "tasks": [row.to_dict() for row in report.rows],
                       **({"fleet": fleet.to_dict()} if fleet is not None else {})})


def compare_document(cmp: CompareReport) -> dict[str, Any]:
    return json_ready({"schema": REPORT_SCHEMA, "report": "compare", "a": run_document(cmp.a),
                       "b": run_document(cmp.b), "matched_on": list(cmp.matched_on),
                       "pairs": [p.to_dict() for p in cmp.pairs], "only_a": list(cmp.only_a),
                       "only_b": list(cmp.only_b), "cross_device": cmp.cross_device,
                       "hardware_spread": cmp.hardware_spread()})


def leaderboard_document(lb: Leaderboard) -> dict[str, Any]:
    return json_ready({"schema": REPORT_SCHEMA, "report": "leaderboard", "ranked_by": [c.name for c in CRITERIA],
                       "devices": list(lb.devices), "sources": [s.meta() for s in lb.sources],
                       "standings": [s.to_dict() for s in lb.standings], "summary": lb.summary})


def dumps(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=1, allow_nan=False, ensure_ascii=False) + "\n"
