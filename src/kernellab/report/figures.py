"""The figures of a run report: which numbers each chart shows, taken from the report model.

Each figure carries the table with the same numbers, so the HTML page shows it under the chart and
the Markdown form prints it instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from kernellab.report import cells, plots, tables
from kernellab.report.compare import CompareReport
from kernellab.report.leaderboard import Leaderboard
from kernellab.report.model import RunReport
from kernellab.report.plots import Point, Series
from kernellab.report.svg import colours_for, ratio_label
from kernellab.report.tables import Table
from kernellab.score.generalization import QUADRANTS

QUADRANT_STYLE = {
    "seen_correct_holdout_correct": ("seen ✓ holdout ✓", "#59a14f"),
    "seen_correct_holdout_wrong": ("seen ✓ holdout ✗", "#f28e2b"),
    "seen_correct_holdout_unknown": ("seen ✓ holdout ?", "#a8d08d"),
    "seen_wrong_holdout_correct": ("seen ✗ holdout ✓", "#76b7b2"),
    "seen_wrong_holdout_wrong": ("seen ✗ holdout ✗", "#e15759"),
    "seen_wrong_holdout_unknown": ("seen ✗ holdout ?", "#c9c9c9"),
}
OVERALL = "all agents"


@dataclass(frozen=True)
class Figure:
    id: str
    title: str
    svg: str
    caption: str
    table: Table | None = None


def colours(report: RunReport) -> dict[str, str]:
    return {**colours_for(report.agents), OVERALL: "#222"}


# The plots drawn from timings: a run without them (no GPU) leaves them out and says so once.
TIMING_PLOTS = ("speedup distribution", "fast_p vs eager and vs torch.compile", "the speedup and fast₁ heatmaps",
                "best speedup by iteration", "cost vs speedup")
STATUS_COLOURS = {"passed": "#59a14f", "holdout_failed": "#f28e2b", "failed": "#e15759", "timeout": "#b07aa1",
                  "no_candidate": "#c9c9c9"}


def run_figures(report: RunReport) -> list[Figure]:
    c = colours(report)
    if not report.timed and report.rows:
        # What a run without timings shows: correctness, where kernels failed, generalization, iterations.
        return [correctness_heatmap(report), status_figure(report), quadrant_figure(report),
                *iteration_figures(report, c, timed=False)]
    untimed = "not timed (no speedups in this run)" if not report.timed else "no correct, timed result"
    return [speedup_distribution(report, c, untimed), *fast_p_figures(report, c, untimed),
            *heatmap_figures(report), quadrant_figure(report), *iteration_figures(report, c),
            cost_figure(report, c, untimed)]


def untimed_note(report: RunReport) -> str | None:
    """The one sentence a run without timings gets in place of its timing plots."""
    if report.timed or not report.rows:
        return None
    modes = ", ".join(report.modes) or "unknown"
    return (f"Nothing in this run was timed (mode {modes}: no GPU), so the plots drawn from timings — "
            f"{', '.join(TIMING_PLOTS)} — are left out; run on a GPU for them. Shown instead: what a run "
            f"without a GPU measures — correctness per agent and category, the verdicts' statuses, "
            f"generalization to held-out configs, and rates by iteration.")


def correctness_heatmap(report: RunReport) -> Figure:
    table = tables.heatmap_table(report, "correct")
    svg = plots.heatmap(table.title, report.agents, report.categories,
                        _heat_cell(report.breakdowns.get("agent_category", {}), table, "correct"), kind="fraction")
    return Figure("heatmap_correct", table.title, svg,
                  "Share of the category's scored results that are correct (every seen, edge and small config).",
                  table)


def status_figure(report: RunReport) -> Figure:
    present = sorted({r.status for r in report.rows}, key=lambda s: (list(STATUS_COLOURS).index(s)
                                                                     if s in STATUS_COLOURS else 99, s))
    table = tables.status_table(report, present)
    counts = {(a, s): sum(1 for r in report.rows if r.agent == a and r.status == s)
              for a in report.agents for s in present}
    totals = {a: sum(counts[a, s] for s in present) for a in report.agents}
    fractions = [(a, {s: counts[a, s] / totals[a] if totals[a] else None for s in present}) for a in report.agents]
    segments = [(s, s.replace("_", " "), STATUS_COLOURS.get(s, "#9c9c9c")) for s in present]
    svg = plots.stacked_bars("Verdict statuses per agent", fractions, segments, counts)
    return Figure("statuses", "Verdict statuses", svg,
                  "How each agent's results ended: passed, failed (wrong output, a violation, a crash), timed out, "
                  "or another status the verdict names.", table)


def speedup_distribution(report: RunReport, c: dict[str, str], empty: str) -> Figure:
    groups = {a: [(f"{r.task_id} (seed {r.seed})", r.speedup_vs_eager) for r in report.rows
                  if r.agent == a and r.scored and r.correct and r.speedup_vs_eager]
              for a in report.agents}
    svg = plots.speedup_strips("Speedup vs eager of correct kernels, per agent", groups, c, empty)
    return Figure("speedup_distribution", "Speedup distribution", svg,
                  "Each dot is one correct kernel (geomean over its seen configs); the box spans the quartiles, "
                  "the thick mark is the median, the dashed line is 1× (as fast as eager PyTorch).")


def fast_p_figures(report: RunReport, c: dict[str, str], empty: str) -> list[Figure]:
    figures = []
    by_agent = report.breakdowns.get("fast_p_curve_by_agent", {})
    for vs, name in (("eager", "eager PyTorch"), ("compile", "torch.compile")):
        series = [Series(a, c[a], [tuple(p) for p in curves[f"vs_{vs}"]]) for a, curves in by_agent.items()]
        if len(series) > 1:
            series.append(Series(OVERALL, c[OVERALL], [tuple(p) for p in report.summary["fast_p_curve"][f"vs_{vs}"]],
                                 "6 4"))
        svg = plots.line_chart(f"fast_p vs {name}", series, xlabel="p (speedup threshold)",
                               ylabel="fast_p", ydomain=(0.0, 1.0), xfmt=ratio_label, xref=1.0, empty=empty)
        figures.append(Figure(f"fast_p_{vs}", f"fast_p vs {vs}", svg,
                              f"Share of all scored tasks whose kernel is correct and more than p× faster than "
                              f"{name}; at p = 0 it is the share correct and timed.",
                              tables.fast_p_threshold_table(report) if vs == "eager" else None))
    return figures


def heatmap_figures(report: RunReport) -> list[Figure]:
    grid = report.breakdowns.get("agent_category", {})
    figures = []
    for metric, kind in (("geomean", "ratio"), ("fast_1", "fraction")):
        table = tables.heatmap_table(report, metric)

        svg = plots.heatmap(table.title, report.agents, report.categories,
                            _heat_cell(grid, table, metric), kind=kind)
        figures.append(Figure(f"heatmap_{metric}", table.title, svg,
                              "Green is faster than eager, red slower (saturating at 4× either way)."
                              if metric == "geomean" else "Share of the category's tasks solved faster than eager.",
                              table))
    return figures


def _heat_cell(grid: dict, table: Table, metric: str):
    """(value for the colour, text as the table shows it) of one agent × category cell."""
    col = {c.key: i for i, c in enumerate(table.columns)}
    row = {r[0].text: r for r in table.rows}

    def cell(agent: str, cat: str) -> tuple[float | None, str]:
        shown = row[agent][col[cat]].text
        blk = grid.get(agent, {}).get(cat)
        if blk is None:
            return None, shown
        if metric == "geomean":
            return blk["speedup"]["vs_eager"]["geomean"], shown
        if metric == "correct":
            return blk["correct_rate"], shown
        return blk["fast_p"]["vs_eager"]["fast_1"], shown

    return cell


def quadrant_figure(report: RunReport) -> Figure:
    table = tables.quadrant_table(report)
    groups = [(OVERALL, report.summary["generalization"]["quadrants"]),
              *report.breakdowns.get("quadrants_by_agent", {}).items()]
    fractions = [(name, {q: v[q]["fraction"] for q in QUADRANTS}) for name, v in groups]
    counts = {(name, q): v[q]["count"] for name, v in groups for q in QUADRANTS}
    segments = [(q, *QUADRANT_STYLE[q]) for q in QUADRANTS]
    svg = plots.stacked_bars("Generalization to held-out configs", fractions, segments, counts)
    g = report.summary["generalization"]
    return Figure("quadrants", "Generalization quadrants", svg,
                  f"AgentKernelArena's quadrants over all scored results. P(holdout correct | seen correct) = "
                  f"{cells.rate(g['p_holdout_given_seen']).text}. “?”: no holdout verdict (the task has no held-out "
                  f"configs, or the pipeline stopped before the holdout stage).", table)


def iteration_figures(report: RunReport, c: dict[str, str], timed: bool = True) -> list[Figure]:
    by_agent = report.breakdowns.get("per_iteration_by_agent", {})
    rates = []
    for a, rows in by_agent.items():
        colour = c.get(a, "#777")
        rates.append(Series(f"{a} correct", colour, [(r["iteration"], r["correct_rate"]) for r in rows]))
        rates.append(Series(f"{a} compiled", colour, [(r["iteration"], r["compile_rate"]) for r in rows], "5 3"))
    best = [Series(a, c.get(a, "#777"), [(r["iteration"], r["best_speedup_geomean"]) for r in rows])
            for a, rows in by_agent.items()]
    empty = "no attempts recorded"
    table = tables.iteration_table(report)
    rate_svg = plots.line_chart("Compile and correctness rate by iteration", rates, xlabel="iteration",
                                ylabel="rate", ydomain=(0.0, 1.0), markers=True, empty=empty)
    best_svg = plots.line_chart("Best speedup so far by iteration (geomean vs eager)", best, xlabel="iteration",
                                ylabel="speedup", ylog=True, yfmt=ratio_label, markers=True,
                                empty=empty if not rates else "not timed (no speedups in this run)")
    rates_caption = "Over the attempts made at each iteration (a job that stopped contributes nothing later)."
    if not timed:
        return [Figure("iterations_rates", "Per-iteration rates", rate_svg, rates_caption, table)]
    return [Figure("iterations_rates", "Per-iteration rates", rate_svg, rates_caption),
            Figure("iterations_best", "Best speedup by iteration", best_svg,
                   "Geomean over jobs with a correct timed attempt so far of each job's best speedup so far.", table)]


def cost_figure(report: RunReport, c: dict[str, str], empty: str) -> Figure:
    rows = [r for r in report.rows if r.correct and r.speedup_vs_eager]
    for field, label in (("cost_usd", "cost (USD, all attempts)"), ("tokens", "tokens (all attempts)"),  # noqa: B007 - label is read after the loop
                         ("wall_s", "agent wall time (s)")):
        known = [r for r in rows if getattr(r, field) is not None]
        if known:
            break
    points = [Point(r.agent, float(getattr(r, field)), r.speedup_vs_eager,
                    f"{r.task_id} ({r.agent}): {r.speedup_vs_eager:.2f}×, {getattr(r, field):g}") for r in known]
    missing = len(rows) - len(points)
    svg = plots.scatter(f"Cost vs speedup: {label}", points, c, xlabel=label, ylabel="speedup vs eager",
                        empty=empty if not rows else "no cost recorded")
    caption = "One dot per correct, timed kernel."
    if missing:
        caption += f" {missing} without a recorded cost left out."
    return Figure("cost_vs_speedup", "Cost vs speedup", svg, caption, tables.cost_table(report))


def compare_figures(cmp: CompareReport) -> list[Figure]:
    agents = sorted({p.agent_a for p in cmp.pairs})
    c = colours_for(agents)
    points = [Point(p.agent_a, p.speedup_a, p.speedup_b,
                    f"{p.task_id} ({p.agent_a}): A {p.speedup_a:.2f}×, B {p.speedup_b:.2f}×")
              for p in cmp.pairs if p.speedup_a is not None and p.speedup_b is not None]
    timed = cmp.a.timed or cmp.b.timed
    svg = plots.scatter("Speedup vs eager: A against B", points, c, xlabel=f"A: {cmp.a.name} ({cmp.a.device_label})",
                        ylabel="B", xlog=True, diagonal=True,
                        empty="no task correct and timed in both runs" if timed else "not timed in either run")
    return [Figure("paired", "A against B", svg,
                   "One dot per task correct and timed in both runs; above the dotted diagonal B is faster, "
                   "below it A is.")]


def leaderboard_figure(lb: Leaderboard) -> Figure:
    c = colours_for([s.agent for s in lb.standings])
    items = [(f"{s.rank}. {s.agent}", s.block["speedup"]["vs_eager"]["geomean"], c[s.agent]) for s in lb.standings]
    svg = plots.ratio_bars("Geomean speedup vs eager (correct kernels)", items, xlabel="speedup vs eager (log scale)")
    return Figure("ranking", "Ranking", svg, "Bars start at 1× (as fast as eager PyTorch); left of it is slower.")
