"""One entry point per report kind and format: ``render_run(report, "html" | "md" | "json") -> str``."""

from __future__ import annotations

from kernellab.report import html, json_report, markdown
from kernellab.report.compare import CompareReport
from kernellab.report.leaderboard import Leaderboard
from kernellab.report.model import ReportError, RunReport

FORMATS = ("html", "md", "json")


def _check(fmt: str) -> str:
    if fmt not in FORMATS:
        raise ReportError(f"unknown format {fmt!r}; expected one of {', '.join(FORMATS)}")
    return fmt


def render_run(report: RunReport, fmt: str) -> str:
    fmt = _check(fmt)
    if fmt == "html":
        return html.render_html(report)
    if fmt == "md":
        return markdown.render_markdown(report)
    return json_report.dumps(json_report.run_document(report))


def render_compare(cmp: CompareReport, fmt: str) -> str:
    fmt = _check(fmt)
    if fmt == "html":
        return html.render_compare_html(cmp)
    if fmt == "md":
        return markdown.render_compare_markdown(cmp)
    return json_report.dumps(json_report.compare_document(cmp))


def render_leaderboard(lb: Leaderboard, fmt: str) -> str:
    fmt = _check(fmt)
    if fmt == "html":
        return html.render_leaderboard_html(lb)
    if fmt == "md":
        return markdown.render_leaderboard_markdown(lb)
    return json_report.dumps(json_report.leaderboard_document(lb))
