"""Load a run directory into a ``RunReport``: runs, per-job rows, the score layer's summary.

A run directory holds one results store (docs/scoring.md, "Results store"), usually with one run; a
directory with several runs (a campaign extended later) is reported whole, each row naming its run.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

from kernellab.report.breakdowns import breakdowns
from kernellab.report.model import ReportError, RunInfo, RunReport, TaskRow
from kernellab.score import (
    Store,
    StoreError,
    attempt_points_from_store,
    results_from_store,
    summarize,
)
from kernellab.score.store import DB_NAME
from kernellab.score.store_records import RETIME, AttemptRecord, RunRecord


def check_run_dir(run_dir: str | os.PathLike[str]) -> Path:
    """The run directory as a path, or a ``ReportError`` saying in one line what is wrong with it."""
    path = Path(run_dir)
    if not path.exists():
        raise ReportError(f"run directory {path} does not exist")
    if not path.is_dir():
        raise ReportError(f"{path} is not a run directory (it is a file)")
    if not (path / DB_NAME).is_file():
        raise ReportError(f"{path} is not a run directory: it has no {DB_NAME}")
    return path


def load_run(run_dir: str | os.PathLike[str]) -> RunReport:
    """Read a run directory (never creating or changing its results, though an older store's schema
    is upgraded in place as ``Store.open`` does)."""
    path = check_run_dir(run_dir)
    try:
        with Store.open(path, create=False) as store, store.snapshot():
            runs, results, points, rows = [], [], [], []
            for record in store.runs():
                counts = store.status_counts(record.id)
                info = run_info(record, store.attempts(run_id=record.id),
                                unfinished=counts.get("pending", 0) + counts.get("running", 0))
                run_results = results_from_store(store, record.id)
                runs.append(info)
                results.extend(run_results)
                points.extend(attempt_points_from_store(store, record.id))
                retimed = retimed_finalists(store, record.id)
                rows.extend(with_retime(TaskRow.from_result(r, info), retimed) for r in run_results)
    except StoreError as exc:
        raise ReportError(str(exc)) from None
    return RunReport(run_dir=path, runs=tuple(runs), results=tuple(results), attempts=tuple(points),
                     rows=tuple(rows), summary=summarize(results, points),
                     breakdowns=breakdowns(results, points))


def retimed_finalists(store: Store, run_id: int) -> dict[tuple[str, str, int, str], dict]:
    """Per job key, the last ``retime`` summary its campaign recorded (``run.scheduler``)."""
    out = {}
    for job in store.jobs(run_id):
        entries = [e.payload for e in store.events(job, RETIME)]
        if entries:
            out[(job.task_id, job.agent, job.seed, job.strategy)] = entries[-1]
    return out


def with_retime(row: TaskRow, retimed: dict[tuple[str, str, int, str], dict]) -> TaskRow:
    entry = retimed.get(row.key)
    if not entry or not entry.get("speedup_vs_eager_geomean"):
        return row
    ci = entry.get("speedup_vs_eager_ci95")
    return replace(row, retimed_speedup_vs_eager=entry["speedup_vs_eager_geomean"],
                   retimed_ci95=tuple(ci) if ci else None, retimed_rounds=len(entry.get("samples") or []))


def run_info(record: RunRecord, attempts: list[AttemptRecord], unfinished: int = 0) -> RunInfo:
    """A run as recorded, completed from its verdicts where the run record left a field empty
    (a run made without naming its device still has verdicts that do)."""
    verdicts = [a.verdict for a in attempts if a.verdict is not None]
    device = record.device or next((v.device for v in verdicts if v.device), None)
    versions = dict(record.versions)
    for v in verdicts:
        for package, version in v.versions.items():
            if version and not versions.get(package):
                versions[package] = str(version)
    modes = tuple(sorted({v.mode.value for v in verdicts}))
    return RunInfo(run_id=record.id, created=record.created, device=device, versions=versions,
                   confined=record.confined, modes=modes, unfinished=unfinished)
