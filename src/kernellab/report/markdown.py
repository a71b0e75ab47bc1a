"""The Markdown forms, for CI logs, pull requests and papers: the same tables as the HTML page (each
chart is replaced by the table of its numbers), with the same banners as block quotes."""

from __future__ import annotations

from kernellab import __version__
from kernellab.report import compare, leaderboard, tables
from kernellab.report.compare import CompareReport
from kernellab.report.figures import run_figures
from kernellab.report.fleet import fleet_markdown
from kernellab.report.leaderboard import Leaderboard
from kernellab.report.model import RunReport
from kernellab.report.tables import Table


def md_table(t: Table, level: int = 2) -> str:
    def esc(s: str) -> str:
        return s.replace("|", "\\|").replace("\n", " ")

    lines = [f"{'#' * level} {t.title}", ""]
    if not t.rows:
        lines.append("_none_")
    else:
        lines.append("| " + " | ".join(esc(c.label) for c in t.columns) + " |")
        lines.append("|" + "|".join("---:" if c.numeric else ":---" for c in t.columns) + "|")
        lines += ["| " + " | ".join(esc(cell.text) for cell in row) + " |" for row in t.rows]
    if t.note:
        lines += ["", f"_{t.note}_"]
    return "\n".join(lines) + "\n"


def run_header(report: RunReport, label: str = "") -> list[str]:
    prefix = f"{label}: " if label else ""
    versions = ", ".join(f"{k} {v}" for k, v in report.versions.items()) or "unknown"
    lines = [f"- {prefix}run directory: `{report.run_dir}`", f"- {prefix}device: {report.device_label}",
             f"- {prefix}mode: {', '.join(report.modes) or 'unknown'}", f"- {prefix}versions: {versions}",
             *(f"- {prefix}run {r.run_id} created {r.created[:19].replace('T', ' ')} UTC" for r in report.runs),
             f"- {prefix}confined: {'yes' if report.confined else '**NO**'}"]
    if report.unfinished:
        lines.append(f"- {prefix}unfinished jobs: {report.unfinished} (pending or running; not shown)")
    lines.append("")
    if not report.confined:
        lines += [(f"> **⚠ UNCONFINED RUN{f' ({label})' if label else ''}**: agents were not confined to their "
                  "workspace (they could read the kernellab installation and held-out task data). Its scores are "
                  "not comparable with confined runs."), ""]
    if not report.rows:
        lines += [f"> {prefix}this run has no finished jobs yet: nothing to report.", ""]
    elif not report.timed:
        lines += [(f"> **{prefix}Nothing was timed** (mode {', '.join(report.modes) or 'unknown'}): speedups, "
                  "fast_p and the speed part of the points read “not timed”."), ""]
    return lines


def render_markdown(report: RunReport) -> str:
    parts = ["\n".join([f"# kernellab report: {report.name}", "", *run_header(report)]),
             md_table(tables.headline_table(report)), md_table(tables.agent_table(report)),
             md_table(tables.category_table(report)), md_table(tables.kind_table(report))]
    parts += [md_table(f.table) for f in run_figures(report) if f.table is not None]
    parts.append(md_table(tables.task_table(report)))
    parts.append(fleet_markdown(report.run_dir))  # a campaign's nodes, rate and failures by kind
    parts.append(f"_Made by kernellab {__version__}; formulas in docs/scoring.md._\n")
    return "\n".join(parts)


def render_compare_markdown(cmp: CompareReport) -> str:
    head = [f"# kernellab comparison: {cmp.a.name} (A) vs {cmp.b.name} (B)", "", *run_header(cmp.a, "A"),
            *run_header(cmp.b, "B")]
    if cmp.cross_device:
        head += [f"> The runs were made on different devices ({cmp.a.device_label} vs {cmp.b.device_label}).", ""]
    head.append(f"{len(cmp.pairs)} jobs matched on {', '.join(cmp.matched_on)}; {len(cmp.only_a)} only in A, "
                f"{len(cmp.only_b)} only in B.\n")
    parts = ["\n".join(head), md_table(compare.headline_pairs(cmp))]
    if cmp.cross_device:
        parts.append(md_table(compare.spread_table(cmp)))
    parts.append(md_table(compare.pair_table(cmp)))
    return "\n".join(parts)


def render_leaderboard_markdown(lb: Leaderboard) -> str:
    head = ["# kernellab leaderboard", ""]
    unconfined = [s.agent for s in lb.standings if not s.confined]
    if unconfined:
        head += [(f"> **⚠ UNCONFINED**: {', '.join(unconfined)} not confined to the workspace; those results are "
                 "not comparable with confined runs."), ""]
    if len(lb.devices) > 1:
        head += [f"> Runs on different devices ({', '.join(lb.devices)}): speedups are pooled across hardware.", ""]
    if lb.standings and not lb.timed:
        head += ["> Nothing was timed in these runs: agents are ranked by correctness.", ""]
    if not lb.standings:
        head += ["> These runs have no finished jobs yet: nothing to rank.", ""]
    return "\n".join(["\n".join(head), md_table(leaderboard.standings_table(lb)),
                      md_table(leaderboard.sources_table(lb))])
