"""Tables of a run report, built once and rendered by every format (HTML sorts them, Markdown prints
them), so the page and the Markdown say the same thing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kernellab.report import cells
from kernellab.report.cells import Cell
from kernellab.report.model import RunReport, TaskRow
from kernellab.score.generalization import QUADRANTS
from kernellab.score.speedup import FAST_P_THRESHOLDS
from kernellab.score.stats import geomean, mean


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    numeric: bool = True
    help: str | None = None  # hover text of the header


@dataclass(frozen=True)
class Table:
    id: str
    title: str
    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    note: str | None = None


def make_table(id: str, title: str, spec: Sequence[tuple[Column, Callable[[Any], Cell]]], items: Sequence[Any],
               note: str | None = None) -> Table:
    return Table(id, title, tuple(c for c, _ in spec), tuple(tuple(f(item) for _, f in spec) for item in items), note)


def _row_speedup(row: TaskRow, vs: str) -> Cell:
    applies = vs != "baseline" or row.kind == "kernel->kernel"
    return cells.speedup(row.speedup(vs), timed=not (row.correct and applies))


def _retimed(row: TaskRow) -> Cell:
    value = row.retimed_speedup_vs_eager
    cell = cells.speedup(value, timed=value is not None or not row.correct)  # a correct one not re-timed
    if row.retimed_ci95 is None:
        return cell
    lo, hi = row.retimed_ci95
    return Cell(f"{cell.text} [{lo:.3f}, {hi:.3f}]", cell.sort, cell.css,
                f"{row.retimed_rounds} rounds; 95% interval over them")


def task_table(report: RunReport) -> Table:
    rows = sorted(report.rows, key=lambda r: (r.category, r.task_id, r.agent, r.seed, r.strategy, r.run_id))
    varies = {name: len({getattr(r, name) for r in rows}) > 1 for name in ("run_id", "seed", "strategy")}
    spec: list[tuple[Column, Callable[[TaskRow], Cell]]] = [
        (Column("task", "task", False), lambda r: cells.text(r.task_id)),
        (Column("category", "category", False), lambda r: cells.text(r.category)),
        (Column("kind", "kind", False), lambda r: cells.text(r.kind)),
        (Column("agent", "agent", False), lambda r: cells.text(r.agent)),
    ]
    if varies["run_id"]:
        spec.append((Column("run", "run"), lambda r: cells.number(r.run_id)))
    if varies["seed"]:
        spec.append((Column("seed", "seed"), lambda r: cells.number(r.seed)))
    if varies["strategy"]:
        spec.append((Column("strategy", "strategy", False), lambda r: cells.text(r.strategy)))
    spec += [
        # "wrap": a long status (unsupported_in_interpreter) may break so that the table fits 1400 px
        (Column("status", "status", False), lambda r: cells.text(r.status, "wrap" if r.scored else "warn wrap")),
        (Column("correct", "correct", help="every seen, edge and small config passed, no violation"),
         lambda r: cells.yes_no(r.correct)),
        (Column("holdout_correct", "holdout correct", help="held-out configs the agent never saw"),
         lambda r: cells.yes_no(r.holdout_correct)),
        (Column("speedup_vs_eager", "× eager", help="geomean over seen configs × dtypes"),
         lambda r: _row_speedup(r, "eager")),
        (Column("speedup_vs_compile", "× compile", help="vs torch.compile of the reference"),
         lambda r: _row_speedup(r, "compile")),
        (Column("speedup_vs_baseline", "× baseline", help="vs the task's baseline kernel (kernel→kernel tasks)"),
         lambda r: _row_speedup(r, "baseline")),
    ]
    if any(r.retimed_speedup_vs_eager for r in rows):
        spec.append((Column("retimed_speedup_vs_eager", "re-timed × eager",
                            help="the finalist timed again at the campaign's end: geomean over its rounds "
                                 "(a fresh process each) and their 95% interval"), _retimed))
    spec += [
        (Column("holdout_speedup_vs_eager", "holdout × eager"),
         lambda r: cells.speedup(r.holdout_speedup_vs_eager, timed=not r.holdout_correct)),
        (Column("pct_of_roofline", "% roofline"), lambda r: cells.percent(r.pct_of_roofline)),
        (Column("tokens", "tokens"), lambda r: cells.number(r.tokens)),
        (Column("cost_usd", "cost"), lambda r: cells.money(r.cost_usd)),
        (Column("wall_s", "wall"), lambda r: cells.seconds(r.wall_s)),
        (Column("attempts", "attempts"), lambda r: cells.number(r.attempts)),
        (Column("arena_points", "points", help="AgentKernelArena: 20 compile + 100 correct + 100 × S"),
         lambda r: cells.number(r.arena_points)),
        (Column("gain_points", "gain", help="100 × max(0, S − 1) for a correct result"),
         lambda r: cells.number(r.gain_points)),
    ]
    note = None if report.timed or not report.rows else "Nothing in this run was timed: speedups read “not timed”."
    return make_table("tasks", "Per-task results", spec, rows, note)


def timed_flag(rows: Sequence[TaskRow], vs: str, run_timed: bool) -> bool:
    """The ``timed`` argument of a group's speedup cells: False (so a missing value reads "not timed")
    only in a run where nothing was timed and the group has correct kernels the reference applies to."""
    return run_timed or not any(r.correct and (vs != "baseline" or r.kind == "kernel->kernel") for r in rows)


def _block_spec(label: str, rows_of: Callable[[str], Sequence[TaskRow]],
                run_timed: bool) -> list[tuple[Column, Callable[[tuple[str, dict]], Cell]]]:
    def fast(vs: str) -> Callable[[tuple[str, dict]], Cell]:
        return lambda kv: cells.fast(kv[1]["fast_p"][f"vs_{vs}"]["fast_1"],
                                     timed=timed_flag(rows_of(kv[0]), vs, run_timed))

    def mean(vs: str) -> Callable[[tuple[str, dict]], Cell]:
        return lambda kv: cells.mean_speedup(kv[1]["speedup"][f"vs_{vs}"],
                                             timed=timed_flag(rows_of(kv[0]), vs, run_timed))

    return [
        (Column("name", label, False), lambda kv: cells.text(kv[0])),
        (Column("n", "n", help="scored results"), lambda kv: cells.number(kv[1]["n"])),
        (Column("n_unscored", "unscored", help="evaluation could not run here (needs_gpu, interpreter gap, "
                                               "harness error)"), lambda kv: cells.number(kv[1]["n_unscored"])),
        (Column("compile_rate", "compiled"), lambda kv: cells.rate(kv[1]["compile_rate"])),
        (Column("correct_rate", "correct"), lambda kv: cells.rate(kv[1]["correct_rate"])),
        (Column("fast_1_vs_eager", "fast₁ eager", help="correct and faster than eager, over all scored"), fast("eager")),
        (Column("fast_1_vs_compile", "fast₁ compile"), fast("compile")),
        (Column("geomean_vs_eager", "geomean × eager"), mean("eager")),
        (Column("geomean_vs_compile", "geomean × compile"), mean("compile")),
        (Column("geomean_vs_baseline", "geomean × baseline"), mean("baseline")),
        (Column("pct_of_roofline_mean", "% roofline"), lambda kv: cells.percent(kv[1]["pct_of_roofline_mean"])),
        (Column("p_holdout_given_seen", "P(holdout | seen)"), lambda kv: cells.rate(kv[1]["p_holdout_given_seen"])),
        (Column("arena_points_mean", "points (mean)"), lambda kv: cells.number(kv[1]["arena_points_mean"])),
        (Column("gain_points_mean", "gain (mean)"), lambda kv: cells.number(kv[1]["gain_points_mean"])),
    ]


def _rows_by(report: RunReport, field: str) -> Callable[[str], list[TaskRow]]:
    return lambda name: [r for r in report.rows if getattr(r, field) == name]


def category_table(report: RunReport) -> Table:
    return make_table("categories", "Per-category summary", _block_spec("category", _rows_by(report, "category"),
                                                                        report.timed),
                      list(report.summary["by_category"].items()))


def kind_table(report: RunReport) -> Table:
    return make_table("kinds", "Per-kind summary", _block_spec("kind", _rows_by(report, "kind"), report.timed),
                      list(report.summary["by_kind"].items()))


def agent_table(report: RunReport) -> Table:
    confined = {a: all(r.confined for r in report.rows if r.agent == a) for a in report.agents}
    costs = report.breakdowns.get("cost_by_agent", {})
    spec = _block_spec("agent", _rows_by(report, "agent"), report.timed) + [
        (Column("cost_usd", "cost (total)"),
         lambda kv: cells.money(costs.get(kv[0], {}).get("cost_usd", {}).get("total"))),
        (Column("tokens", "tokens (total)"),
         lambda kv: cells.number(costs.get(kv[0], {}).get("tokens", {}).get("total"), 0)),
        (Column("confined", "confined", help="agents ran confined to their workspace"),
         lambda kv: Cell("yes", 1, "good") if confined.get(kv[0], True) else Cell("NO — unconfined", 0, "bad")),
    ]
    return make_table("agents", "Per-agent summary", spec, list(report.summary["by_agent"].items()),
                      note="points: AgentKernelArena's 20 compile + 100 correct + 100 × S (S vs what the agent "
                           "started from); gain: 100 × max(0, S − 1), the speed gained over that start.")


def fast_p_threshold_table(report: RunReport) -> Table:
    """fast_p at the named thresholds, overall and per agent, vs eager and vs compile."""
    groups = [("all agents", report.summary["overall"]), *report.summary["by_agent"].items()]
    items = [(name, vs, blk) for name, blk in groups for vs in ("eager", "compile")]
    rows_of = _rows_by(report, "agent")

    def timed(it: tuple[str, str, dict]) -> bool:
        return timed_flag(report.rows if it[0] == "all agents" else rows_of(it[0]), it[1], report.timed)

    spec: list[tuple[Column, Callable[[Any], Cell]]] = [
        (Column("agent", "agent", False), lambda it: cells.text(it[0])),
        (Column("vs", "vs", False), lambda it: cells.text(it[1]))]
    for p in FAST_P_THRESHOLDS:
        key = f"fast_{p:g}"
        spec.append((Column(key, f"fast {p:g}"),
                     lambda it, key=key: cells.fast(it[2]["fast_p"][f"vs_{it[1]}"][key], timed=timed(it))))
    return make_table("fast_p", "fast_p (correct and speedup > p, over all scored results)", spec, items)


def heatmap_table(report: RunReport, metric: str) -> Table:
    """Agents × categories: ``metric`` is "geomean" (speedup vs eager), "fast_1" (vs eager) or
    "correct" (correctness rate, which a run without timings has too)."""
    grid: Mapping[str, Mapping[str, dict]] = report.breakdowns.get("agent_category", {})

    def cell(agent: str, cat: str) -> Cell:
        blk = grid.get(agent, {}).get(cat)
        if blk is None:
            return Cell(cells.MISSING, None, "muted", "no task of this category for this agent")
        timed = timed_flag([r for r in report.rows if r.agent == agent and r.category == cat], "eager",
                           report.timed)
        if metric == "geomean":
            return cells.mean_speedup(blk["speedup"]["vs_eager"], timed=timed)
        if metric == "correct":
            return cells.rate(blk["correct_rate"])
        return cells.fast(blk["fast_p"]["vs_eager"]["fast_1"], timed=timed)

    spec: list[tuple[Column, Callable[[str], Cell]]] = [(Column("agent", "agent", False), cells.text)]
    for cat in report.categories:
        spec.append((Column(cat, cat), lambda agent, cat=cat: cell(agent, cat)))
    title = {"geomean": "Geomean speedup vs eager (correct results), agent × category",
             "fast_1": "fast₁ vs eager, agent × category",
             "correct": "Correctness rate, agent × category"}[metric]
    return make_table(f"heatmap_{metric}", title, spec, list(report.agents))


def status_table(report: RunReport, statuses: Sequence[str]) -> Table:
    """Per agent, how many of its results ended in each verdict status."""
    spec: list[tuple[Column, Callable[[Any], Cell]]] = [(Column("agent", "agent", False), cells.text)]
    for status in statuses:
        spec.append((Column(status, status.replace("_", " ")),
                     lambda agent, status=status: cells.number(
                         sum(1 for r in report.rows if r.agent == agent and r.status == status))))
    return make_table("statuses", "Verdict statuses per agent", spec, list(report.agents))


def quadrant_table(report: RunReport) -> Table:
    groups = [("all agents", report.summary["generalization"]["quadrants"]),
              *report.breakdowns.get("quadrants_by_agent", {}).items()]
    spec: list[tuple[Column, Callable[[Any], Cell]]] = [(Column("agent", "agent", False), lambda g: cells.text(g[0]))]
    for q in QUADRANTS:
        spec.append((Column(q, q.replace("_", " ")),
                     lambda g, q=q: Cell(f"{g[1][q]['count']} ({cells.rate(g[1][q]['fraction']).text})",
                                         g[1][q]["fraction"])))
    return make_table("quadrants", "Generalization quadrants (seen × held-out correctness)", spec, groups)


def iteration_table(report: RunReport) -> Table:
    rows = [("all agents", r) for r in report.summary.get("per_iteration", [])]
    rows += [(agent, r) for agent, rs in report.breakdowns.get("per_iteration_by_agent", {}).items() for r in rs]
    spec: list[tuple[Column, Callable[[Any], Cell]]] = [
        (Column("agent", "agent", False), lambda x: cells.text(x[0])),
        (Column("iteration", "iteration"), lambda x: cells.number(x[1]["iteration"])),
        (Column("attempts", "attempts"), lambda x: cells.number(x[1]["attempts"])),
        (Column("compile_rate", "compiled"), lambda x: cells.rate(x[1]["compile_rate"])),
        (Column("correct_rate", "correct"), lambda x: cells.rate(x[1]["correct_rate"])),
        (Column("solved_so_far", "solved so far"), lambda x: cells.rate(x[1]["solved_so_far"])),
        (Column("best_speedup_geomean", "best × eager so far"),
         lambda x: cells.speedup(x[1]["best_speedup_geomean"], timed=not x[1]["solved_so_far"])),
    ]
    return make_table("iterations", "Per iteration", spec, rows)


def cost_table(report: RunReport) -> Table:
    cost = report.summary["cost"]
    fmt: dict[str, Callable[[Any], Cell]] = {"wall_s": cells.seconds, "cost_usd": cells.money}
    labels = {"wall_s": "agent wall time", "tokens": "tokens (in + out)", "tokens_in": "tokens in",
              "tokens_out": "tokens out", "steps": "agent steps", "cost_usd": "money"}
    items = [(name, cost[name]) for name in labels]
    spec: list[tuple[Column, Callable[[Any], Cell]]] = [
        (Column("quantity", "quantity", False), lambda it: cells.text(labels[it[0]])),
        (Column("total", "total"), lambda it: fmt.get(it[0], lambda v: cells.number(v, 0))(it[1]["total"])),
        (Column("mean", "mean per job"), lambda it: fmt.get(it[0], cells.number)(it[1]["mean"])),
    ]
    note = (f"per correct result: {cells.money(cost['cost_usd_per_correct']).text}, "
            f"{cells.seconds(cost['wall_s_per_correct']).text}")
    return make_table("cost", "Cost (every attempt counts)", spec, items, note)


def headline_table(report: RunReport) -> Table:
    """The few numbers a reader looks for first, as label/value pairs."""
    s = report.summary
    o, g, mem, pts = s["overall"], s["generalization"], s["memory"], s["points"]
    d = g["holdout_speedup_delta"]

    def timed(vs: str) -> bool:
        return timed_flag(report.rows, vs, report.timed)

    items = [
        ("results (scored / unscored)", Cell(f"{s['n_scored']} / {s['n_unscored']}", s["n_results"])),
        ("compile rate", cells.rate(o["compile_rate"])), ("correctness rate", cells.rate(o["correct_rate"])),
        ("fast₁ vs eager", cells.fast(o["fast_p"]["vs_eager"]["fast_1"], timed=timed("eager"))),
        ("fast₁ vs compile", cells.fast(o["fast_p"]["vs_compile"]["fast_1"], timed=timed("compile"))),
        ("geomean speedup vs eager", cells.mean_speedup(o["speedup"]["vs_eager"], timed=timed("eager"))),
        ("geomean speedup vs compile", cells.mean_speedup(o["speedup"]["vs_compile"], timed=timed("compile"))),
        ("geomean speedup vs baseline (kernel→kernel)",
         cells.mean_speedup(o["speedup"]["vs_baseline"], timed=timed("baseline"))),
        ("mean % of roofline", cells.percent(o["pct_of_roofline_mean"])),
        ("P(holdout correct | seen correct)", cells.rate(g["p_holdout_given_seen"])),
        ("holdout / seen speedup (geomean ratio)", cells.ratio(d["geomean_ratio"])),
        ("peak memory vs eager (geomean)", cells.ratio(mem["peak_mem_ratio_geomean"])),
        ("AgentKernelArena points (total / mean)",
         Cell(f"{cells.number(pts['arena_total']).text} / {cells.number(pts['arena_mean']).text}", pts["arena_total"])),
        ("gain points (total / mean)",
         Cell(f"{cells.number(pts['gain_total']).text} / {cells.number(pts['gain_mean']).text}", pts["gain_total"])),
    ]
    retimed = [r.retimed_speedup_vs_eager for r in report.rows if r.retimed_speedup_vs_eager]
    if retimed:
        means = {"n": len(retimed), "geomean": geomean(retimed), "mean": mean(retimed)}
        items.insert(6, ("geomean speedup vs eager, re-timed finalists", cells.mean_speedup(means, timed=True)))
    spec: list[tuple[Column, Callable[[Any], Cell]]] = [
        (Column("quantity", "quantity", False), lambda it: cells.text(it[0])),
        (Column("value", "value"), lambda it: it[1])]
    return make_table("headline", "Headline", spec, items)
