"""Two runs side by side: per-task speedup deltas and, when the runs were made on different devices,
how much a kernel's speedup moves across hardware.

Jobs are matched on (task, agent, seed, strategy). When that matches nothing and each run holds one
agent (comparing two agents' runs), they are matched on (task, seed, strategy), then on (task, seed).
A speedup only counts for a correct kernel: a wrong kernel's speed means nothing.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from kernellab.report import cells
from kernellab.report.cells import Cell
from kernellab.report.model import RunReport, TaskRow
from kernellab.report.tables import Column, Table, make_table
from kernellab.score.jsonable import json_ready
from kernellab.score.stats import geomean, ratio

MATCH_LEVELS = (("task_id", "agent", "seed", "strategy"), ("task_id", "seed", "strategy"), ("task_id", "seed"))


@dataclass(frozen=True)
class PairRow:
    task_id: str
    category: str
    agent_a: str
    agent_b: str
    seed: int
    strategy: str
    correct_a: bool
    correct_b: bool
    speedup_a: float | None  # vs eager, correct kernels only
    speedup_b: float | None
    compile_speedup_a: float | None
    compile_speedup_b: float | None

    @classmethod
    def of(cls, a: TaskRow, b: TaskRow) -> PairRow:
        def ok(row: TaskRow, vs: str) -> float | None:
            s = row.speedup(vs)
            return s if row.correct and s is not None and s > 0 else None

        return cls(task_id=a.task_id, category=a.category, agent_a=a.agent, agent_b=b.agent, seed=a.seed,
                   strategy=a.strategy, correct_a=a.correct, correct_b=b.correct, speedup_a=ok(a, "eager"),
                   speedup_b=ok(b, "eager"), compile_speedup_a=ok(a, "compile"), compile_speedup_b=ok(b, "compile"))

    @property
    def delta(self) -> float | None:
        """B − A of the speedups vs eager."""
        return None if self.speedup_a is None or self.speedup_b is None else self.speedup_b - self.speedup_a

    @property
    def ratio(self) -> float | None:
        """B / A of the speedups vs eager."""
        return ratio(self.speedup_b, self.speedup_a)

    @property
    def spread(self) -> float | None:
        """The larger speedup over the smaller (≥ 1): how far apart the two measurements are."""
        r = self.ratio
        return None if r is None else max(r, 1 / r)

    def to_dict(self) -> dict[str, Any]:
        return json_ready({**asdict(self), "delta": self.delta, "ratio": self.ratio, "spread": self.spread})


@dataclass(frozen=True)
class CompareReport:
    a: RunReport
    b: RunReport
    pairs: tuple[PairRow, ...]
    matched_on: tuple[str, ...]
    only_a: tuple[str, ...]  # job keys present in A only ("task agent seed strategy")
    only_b: tuple[str, ...]

    @property
    def cross_device(self) -> bool:
        """Both runs name their device, and the devices differ."""
        return bool(self.a.devices and self.b.devices and set(self.a.devices) != set(self.b.devices))

    def hardware_spread(self) -> dict[str, Any]:
        """Over tasks correct and timed in both runs: the geomean of B/A, the median and largest
        spread, and how many kernels beat eager on one device but not on the other."""
        timed = [p for p in self.pairs if p.ratio is not None]
        worst = max(timed, key=lambda p: p.spread or 0.0, default=None)
        return json_ready({
            "n": len(timed),
            "geomean_ratio": geomean(p.ratio for p in timed),
            "median_spread": statistics.median(p.spread for p in timed) if timed else None,
            "max_spread": worst.spread if worst else None,
            "max_spread_task": worst.task_id if worst else None,
            "flips": sum(1 for p in timed if (p.speedup_a > 1) != (p.speedup_b > 1)),
        })


def compare_runs(a: RunReport, b: RunReport) -> CompareReport:
    single = len(a.agents) == 1 and len(b.agents) == 1
    level: tuple[str, ...] = MATCH_LEVELS[0]
    for i, fields in enumerate(MATCH_LEVELS):
        if i > 0 and not single:
            break
        keys_a, keys_b = _index(a.rows, fields), _index(b.rows, fields)
        level = fields
        if keys_a.keys() & keys_b.keys():
            break
    keys_a, keys_b = _index(a.rows, level), _index(b.rows, level)
    common = sorted(keys_a.keys() & keys_b.keys(), key=lambda k: tuple(map(str, k)))
    pairs = tuple(PairRow.of(keys_a[k], keys_b[k]) for k in common)
    return CompareReport(a=a, b=b, pairs=pairs, matched_on=level,
                         only_a=tuple(" ".join(map(str, k)) for k in sorted(keys_a.keys() - keys_b.keys(), key=str)),
                         only_b=tuple(" ".join(map(str, k)) for k in sorted(keys_b.keys() - keys_a.keys(), key=str)))


def _index(rows: tuple[TaskRow, ...], fields: tuple[str, ...]) -> dict[tuple, TaskRow]:
    """Rows by key; with several runs in one directory the latest run's row wins."""
    return {tuple(getattr(r, f) for f in fields): r for r in sorted(rows, key=lambda r: r.run_id)}


def pair_table(cmp: CompareReport) -> Table:
    la, lb = "A", "B"
    agents_differ = any(p.agent_a != p.agent_b for p in cmp.pairs)
    spec: list[tuple[Column, Any]] = [
        (Column("task", "task", False), lambda p: cells.text(p.task_id)),
        (Column("category", "category", False), lambda p: cells.text(p.category)),
        (Column("agent", "agent", False),
         lambda p: cells.text(f"{p.agent_a} / {p.agent_b}" if agents_differ else p.agent_a)),
        (Column("seed", "seed"), lambda p: cells.number(p.seed)),
        (Column("correct_a", f"correct {la}"), lambda p: cells.yes_no(p.correct_a)),
        (Column("correct_b", f"correct {lb}"), lambda p: cells.yes_no(p.correct_b)),
        (Column("speedup_a", f"× eager {la}"), lambda p: cells.speedup(p.speedup_a, timed=not p.correct_a)),
        (Column("speedup_b", f"× eager {lb}"), lambda p: cells.speedup(p.speedup_b, timed=not p.correct_b)),
        (Column("delta", "Δ (B − A)"), lambda p: cells.delta(p.delta)),
        (Column("ratio", "B / A"), lambda p: cells.ratio(p.ratio)),
        (Column("compile_a", f"× compile {la}"),
         lambda p: cells.speedup(p.compile_speedup_a, timed=not p.correct_a)),
        (Column("compile_b", f"× compile {lb}"),
         lambda p: cells.speedup(p.compile_speedup_b, timed=not p.correct_b)),
    ]
    if cmp.cross_device:
        spec.append((Column("spread", "spread across devices", help="larger speedup / smaller"),
                     lambda p: cells.ratio(p.spread)))
    return make_table("pairs", "Per-task comparison", spec, list(cmp.pairs),
                      note=f"matched on {', '.join(cmp.matched_on)}")


def headline_pairs(cmp: CompareReport) -> Table:
    """The headline numbers of both runs side by side."""
    oa, ob = cmp.a.summary["overall"], cmp.b.summary["overall"]

    def row(label: str, get: Any, fmt: Any, dfmt: Any) -> tuple[str, Cell, Cell, Cell]:
        va, vb = get(oa), get(ob)
        d = vb - va if va is not None and vb is not None else None
        return label, fmt(va), fmt(vb), cells.Cell(cells.MISSING, None, "muted") if d is None else dfmt(d)

    def pp(d: float) -> Cell:
        return cells.Cell(f"{100 * d:+.1f} pp", d, "good" if d > 0 else "bad" if d < 0 else "")

    def pts(d: float) -> Cell:
        return cells.Cell(f"{d:+.1f}", d, "good" if d > 0 else "bad" if d < 0 else "")

    items = [
        row("correctness rate", lambda o: o["correct_rate"], cells.rate, pp),
        row("fast₁ vs eager", lambda o: o["fast_p"]["vs_eager"]["fast_1"], cells.rate, pp),
        row("fast₁ vs compile", lambda o: o["fast_p"]["vs_compile"]["fast_1"], cells.rate, pp),
        row("geomean speedup vs eager", lambda o: o["speedup"]["vs_eager"]["geomean"], cells.speedup, cells.delta),
        row("geomean speedup vs compile", lambda o: o["speedup"]["vs_compile"]["geomean"], cells.speedup,
            cells.delta),
        row("AgentKernelArena points (mean)", lambda o: o["arena_points_mean"], cells.number, pts),
        row("gain points (mean)", lambda o: o["gain_points_mean"], cells.number, pts),
    ]
    spec: list[tuple[Column, Any]] = [
        (Column("quantity", "quantity", False), lambda it: cells.text(it[0])),
        (Column("a", f"A: {cmp.a.name}"), lambda it: it[1]),
        (Column("b", f"B: {cmp.b.name}"), lambda it: it[2]),
        (Column("delta", "B − A"), lambda it: it[3]),
    ]
    return make_table("headline_compare", "Headline", spec, items)


def spread_table(cmp: CompareReport) -> Table:
    s = cmp.hardware_spread()
    items = [
        ("tasks correct and timed on both", cells.number(s["n"])),
        ("geomean of B / A speedup", cells.ratio(s["geomean_ratio"])),
        ("median spread (larger / smaller)", cells.ratio(s["median_spread"])),
        ("largest spread", cells.ratio(s["max_spread"], title=s["max_spread_task"])),
        ("task with the largest spread", cells.text(s["max_spread_task"])),
        ("faster than eager on one device only", cells.number(s["flips"])),
    ]
    spec: list[tuple[Column, Any]] = [(Column("quantity", "quantity", False), lambda it: cells.text(it[0])),
                                      (Column("value", "value"), lambda it: it[1])]
    return make_table("spread", f"Speedup spread across hardware: {cmp.a.device_label} (A) vs "
                                f"{cmp.b.device_label} (B)", spec, items)
