"""``kernellab report`` and ``kernellab leaderboard``: results of run directories as HTML, Markdown
or JSON (docs/report.md)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from kernellab.cli.errors import UsageError, report_usage_error
from kernellab.cli.options import Debug
from kernellab.report import (
    FORMATS,
    ReportError,
    build_leaderboard,
    compare_runs,
    load_run,
    render_compare,
    render_leaderboard,
    render_run,
)
from kernellab.score import StoreError

FORMAT_HELP = "html | md | json"


def report_command(
    run_dir: Annotated[Path, typer.Argument(help="run directory (holds results.sqlite)")],
    compare: Annotated[Path | None, typer.Option("--compare", help="a second run directory, shown side by side")]
    = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help=FORMAT_HELP)] = "html",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="file to write; '-' for stdout (default: stdout "
                                             "for md and json, RUN_DIR/report.html or RUN_DIR/compare.html for html)")]
    = None,
    debug: Debug = False,
) -> None:
    """Report on one run, or compare two: self-contained HTML with plots, Markdown, or JSON."""
    try:
        _check_format(fmt)
        report = load_run(run_dir)
        if compare is None:
            text, default = render_run(report, fmt), run_dir / "report.html"
        else:
            text, default = render_compare(compare_runs(report, load_run(compare)), fmt), run_dir / "compare.html"
        _write(text, out if out is not None else (default if fmt == "html" else Path("-")))
    except (*UsageError, ReportError, StoreError) as exc:
        report_usage_error(exc, debug)
        raise typer.Exit(2) from None


def leaderboard_command(
    run_dirs: Annotated[list[Path], typer.Argument(help="one or more run directories")],
    fmt: Annotated[str, typer.Option("--format", "-f", help=FORMAT_HELP)] = "md",
    out: Annotated[Path | None, typer.Option("--out", "-o", help="file to write (default: stdout)")] = None,
    debug: Debug = False,
) -> None:
    """Rank agents across runs by geomean speedup vs eager on correct kernels (ties explained)."""
    try:
        _check_format(fmt)
        seen: set[Path] = set()
        reports = []
        for d in run_dirs:
            key = d.resolve()
            if key not in seen:
                seen.add(key)
                reports.append(load_run(d))
        _write(render_leaderboard(build_leaderboard(reports), fmt), out or Path("-"))
    except (*UsageError, ReportError, StoreError) as exc:
        report_usage_error(exc, debug)
        raise typer.Exit(2) from None


def _check_format(fmt: str) -> None:
    if fmt not in FORMATS:
        raise ReportError(f"unknown --format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _write(text: str, out: Path) -> None:
    if str(out) == "-":
        sys.stdout.write(text)
        return
    if out.parent and not out.parent.is_dir():
        raise ReportError(f"cannot write {out}: directory {out.parent} does not exist")
    out.write_text(text, encoding="utf-8")
    typer.secho(f"wrote {out}", err=True)
