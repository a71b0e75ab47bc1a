"""The HTML forms: one self-contained page each (CSS, JavaScript and SVG plots inline; nothing is
fetched), rendered from Jinja2 templates in ``templates/``."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import jinja2

from kernellab import __version__
from kernellab.report import compare, figures, leaderboard, tables
from kernellab.report.compare import CompareReport
from kernellab.report.leaderboard import Leaderboard
from kernellab.report.model import RunReport

TEMPLATES = Path(__file__).parent / "templates"


@cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _render(template: str, **context: Any) -> str:
    return environment().get_template(template).render(version=__version__, **context)


def render_html(report: RunReport) -> str:
    return _render("report.html.j2", kind="run", title=f"kernellab report: {report.name}", report=report,
                   headline=tables.headline_table(report), figures=figures.run_figures(report),
                   plots_note=figures.untimed_note(report),
                   agents=tables.agent_table(report), categories=tables.category_table(report),
                   kinds=tables.kind_table(report), tasks=tables.task_table(report))


def render_compare_html(cmp: CompareReport) -> str:
    return _render("compare.html.j2", kind="compare", title=f"kernellab comparison: {cmp.a.name} vs {cmp.b.name}",
                   cmp=cmp, headline=compare.headline_pairs(cmp), figures=figures.compare_figures(cmp),
                   pairs=compare.pair_table(cmp), spread=compare.spread_table(cmp) if cmp.cross_device else None)


def render_leaderboard_html(lb: Leaderboard) -> str:
    unconfined = [s.agent for s in lb.standings if not s.confined]
    return _render("leaderboard.html.j2", kind="leaderboard", title="kernellab leaderboard", lb=lb,
                   unconfined=unconfined, standings=leaderboard.standings_table(lb),
                   sources=leaderboard.sources_table(lb), bars=figures.leaderboard_figure(lb))
