"""Agents ranked across one or more runs.

The results of every run are pooled and summarized once (``kernellab.score.summarize``), so an
agent's numbers are over all its tasks and seeds. Agents are ranked by, in order:

1. the geometric mean speedup vs eager over its correct, timed kernels (higher first; an agent with
   nothing timed comes after every timed one);
2. the correctness rate; 3. fast₁ vs eager; 4. the number of scored results.

Each criterion is compared at the precision the table shows (speedups to 0.01×, rates to 0.1%), so an
order a reader cannot see in the table is never claimed; the criterion that broke a tie is written
beside the lower agent. Agents equal on all four share a rank.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from kernellab.report import cells
from kernellab.report.model import RunReport
from kernellab.report.tables import Column, Table, make_table, timed_flag
from kernellab.score import summarize
from kernellab.score.jsonable import json_ready


@dataclass(frozen=True)
class Criterion:
    name: str
    get: Callable[[dict], float | int | None]
    digits: int  # compared at this many decimals
    show: Callable[[dict], str]

    def key(self, block: dict) -> float:
        """Sort key, larger is better; undefined sorts below every defined value."""
        v = self.get(block)
        return float("-inf") if v is None else round(float(v), self.digits)


def _geomean(b: dict) -> float | None:
    return b["speedup"]["vs_eager"]["geomean"]


def _fast_1(b: dict) -> float | None:
    return b["fast_p"]["vs_eager"]["fast_1"]


CRITERIA = (
    Criterion("geomean speedup vs eager", _geomean, 2,
              lambda b: "no correct timed kernel" if _geomean(b) is None else cells.speedup(_geomean(b)).text),
    Criterion("correctness rate", lambda b: b["correct_rate"], 3, lambda b: cells.rate(b["correct_rate"]).text),
    Criterion("fast₁ vs eager", _fast_1, 3, lambda b: cells.rate(_fast_1(b)).text),
    Criterion("scored results", lambda b: b["n"], 0, lambda b: str(b["n"])),
)


@dataclass(frozen=True)
class Standing:
    rank: int
    agent: str
    block: dict[str, Any]
    runs: tuple[str, ...]
    confined: bool
    tie_note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        b = self.block
        return json_ready({
            "rank": self.rank, "agent": self.agent, "n": b["n"], "n_unscored": b["n_unscored"],
            "compile_rate": b["compile_rate"], "correct_rate": b["correct_rate"], "fast_1_vs_eager": _fast_1(b),
            "fast_1_vs_compile": b["fast_p"]["vs_compile"]["fast_1"],
            "geomean_speedup_vs_eager": _geomean(b), "speedup_n": b["speedup"]["vs_eager"]["n"],
            "geomean_speedup_vs_compile": b["speedup"]["vs_compile"]["geomean"],
            "arena_points_mean": b["arena_points_mean"], "gain_points_mean": b["gain_points_mean"],
            "confined": self.confined, "runs": list(self.runs), "tie_note": self.tie_note, "block": b})


@dataclass(frozen=True)
class Leaderboard:
    sources: tuple[RunReport, ...]
    standings: tuple[Standing, ...]
    summary: dict[str, Any]

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(d for s in self.sources for d in s.devices))

    @property
    def timed(self) -> bool:
        return any(s.timed for s in self.sources)


def build_leaderboard(reports: Sequence[RunReport]) -> Leaderboard:
    results = [r for rep in reports for r in rep.results]
    summary = summarize(results)
    by_agent: dict[str, dict] = summary["by_agent"]
    order = sorted(by_agent, key=lambda a: (tuple(-c.key(by_agent[a]) for c in CRITERIA), a))
    standings: list[Standing] = []
    for i, agent in enumerate(order):
        block = by_agent[agent]
        rank, note = i + 1, None
        if standings:
            prev = standings[-1]
            rank, note = _tie(prev, block, agent, rank)
        runs = tuple(rep.name for rep in reports if agent in rep.agents)
        confined = all(row.confined for rep in reports for row in rep.rows if row.agent == agent)
        standings.append(Standing(rank, agent, block, runs, confined, note))
    return Leaderboard(tuple(reports), tuple(standings), summary)


def _tie(prev: Standing, block: dict, agent: str, rank: int) -> tuple[int, str | None]:
    first = CRITERIA[0]
    if first.key(prev.block) != first.key(block):
        return rank, None
    for c in CRITERIA[1:]:
        if c.key(prev.block) != c.key(block):
            return rank, (f"same {first.name} as {prev.agent} ({first.show(block)}); ranked below it on "
                          f"{c.name} ({c.show(block)} vs {c.show(prev.block)})")
    return prev.rank, f"tied with {prev.agent} on every criterion: shared rank"


def standings_table(lb: Leaderboard) -> Table:
    def b(s: Standing) -> dict:
        return s.block

    def timed(s: Standing, vs: str) -> bool:
        rows = [row for rep in lb.sources for row in rep.rows if row.agent == s.agent]
        return timed_flag(rows, vs, lb.timed)

    spec: list[tuple[Column, Any]] = [
        (Column("rank", "rank"), lambda s: cells.number(s.rank)),
        (Column("agent", "agent", False), lambda s: cells.text(s.agent)),
        (Column("geomean_speedup_vs_eager", "geomean × eager",
                help="over the agent's correct, timed kernels"),
         lambda s: cells.mean_speedup(b(s)["speedup"]["vs_eager"], timed=timed(s, "eager"))),
        (Column("correct_rate", "correct"), lambda s: cells.rate(b(s)["correct_rate"])),
        (Column("fast_1_vs_eager", "fast₁ eager"),
         lambda s: cells.fast(_fast_1(b(s)), timed=timed(s, "eager"))),
        (Column("fast_1_vs_compile", "fast₁ compile"),
         lambda s: cells.fast(b(s)["fast_p"]["vs_compile"]["fast_1"], timed=timed(s, "compile"))),
        (Column("geomean_speedup_vs_compile", "geomean × compile"),
         lambda s: cells.mean_speedup(b(s)["speedup"]["vs_compile"], timed=timed(s, "compile"))),
        (Column("n", "scored"), lambda s: cells.number(b(s)["n"])),
        (Column("compile_rate", "compiled"), lambda s: cells.rate(b(s)["compile_rate"])),
        (Column("arena_points_mean", "points (mean)"), lambda s: cells.number(b(s)["arena_points_mean"])),
        (Column("gain_points_mean", "gain (mean)"), lambda s: cells.number(b(s)["gain_points_mean"])),
        (Column("runs", "runs", False), lambda s: cells.text(", ".join(s.runs))),
        (Column("confined", "confined"),
         lambda s: cells.Cell("yes", 1, "good") if s.confined else cells.Cell("NO — unconfined", 0, "bad")),
        (Column("tie_note", "tie", False), lambda s: cells.text(s.tie_note) if s.tie_note else cells.Cell("", None)),
    ]
    return make_table("leaderboard", "Leaderboard", spec, list(lb.standings),
                      note="Ranked by " + ", then ".join(c.name for c in CRITERIA) + ".")


def sources_table(lb: Leaderboard) -> Table:
    spec: list[tuple[Column, Any]] = [
        (Column("run", "run", False), lambda r: cells.text(r.name)),
        (Column("device", "device", False), lambda r: cells.text(r.device_label)),
        (Column("mode", "mode", False), lambda r: cells.text(", ".join(r.modes) or None)),
        (Column("versions", "versions", False),
         lambda r: cells.text(", ".join(f"{k} {v}" for k, v in r.versions.items()) or None)),
        (Column("results", "results"), lambda r: cells.number(len(r.rows))),
        (Column("confined", "confined"),
         lambda r: cells.Cell("yes", 1, "good") if r.confined else cells.Cell("NO — unconfined", 0, "bad")),
    ]
    return make_table("sources", "Runs", spec, list(lb.sources))
