"""Reports over run directories: HTML (self-contained, plots as inline SVG, sortable tables), Markdown
and JSON, a comparison of two runs, and a leaderboard across runs. Every number comes from
``kernellab.score``; this layer selects, lays out and formats. See docs/report.md.
"""

from kernellab.report.build import check_run_dir, load_run
from kernellab.report.compare import CompareReport, compare_runs
from kernellab.report.leaderboard import Leaderboard, build_leaderboard
from kernellab.report.model import ReportError, RunReport, TaskRow
from kernellab.report.render import (
    FORMATS,
    render_compare,
    render_leaderboard,
    render_run,
)

__all__ = [
    "FORMATS", "CompareReport", "Leaderboard", "ReportError", "RunReport", "TaskRow", "build_leaderboard",
    "check_run_dir", "compare_runs", "load_run", "render_compare", "render_leaderboard", "render_run",
]
