"""The campaign's standing as ``kernellab run`` shows it, read from a real results store: each
finished job numbered once and in order, an ETA that counts down while the last job runs, and
crashed jobs kept apart from jobs whose verdict failed."""

from __future__ import annotations

import io
import re
import sqlite3
from datetime import UTC, datetime, timedelta

from rich.console import Console

from kernellab.run.progress import CampaignProgress, standing
from kernellab.run.queue import JobQueue
from kernellab.score.store import Store
from kernellab.score.store_records import JobSpec


def _campaign(tmp_path, n: int):
    store = Store.open(tmp_path / "run")
    run = store.create_run({}, device="cpu", confined=True)
    store.add_jobs(run.id, [JobSpec(f"elementwise/t{i}", "replay") for i in range(n)])
    return store, run


def _set_times(store: Store, job_id: int, started: datetime, finished: datetime | None) -> None:
    """Job times as a campaign that has run for a while would have them."""
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE jobs SET started = ?, finished = ? WHERE id = ?",
                   (started.isoformat(timespec="microseconds"),
                    finished.isoformat(timespec="microseconds") if finished else None, job_id))


def test_jobs_finishing_between_two_polls_are_numbered_in_order(tmp_path):
    store, run = _campaign(tmp_path, 4)
    out = io.StringIO()
    progress = CampaignProgress(store, run.id, Console(file=out, width=200), "t", workers=2)
    with progress:
        for _ in range(3):  # three jobs finish before the next poll
            store.finish_job(JobQueue(store).claim("w0"), "done")
        progress.tick()
        progress.tick()
        store.finish_job(JobQueue(store).claim("w0"), "failed", "RuntimeError: worker died")
        progress.tick()
    numbers = re.findall(r"^\[(\d+)/4\]", out.getvalue(), re.M)
    assert numbers == ["1", "2", "3", "4"]  # never [3/4] three times, never a number skipped
    assert "crashed: RuntimeError: worker died" in out.getvalue()


def test_eta_counts_down_while_the_last_job_runs(tmp_path):
    store, run = _campaign(tmp_path, 2)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    first = JobQueue(store).claim("w0")
    store.finish_job(first, "done")
    _set_times(store, first.id, t0, t0 + timedelta(seconds=100))  # a job takes 100 s
    last = JobQueue(store).claim("w0")
    _set_times(store, last.id, t0 + timedelta(seconds=100), None)
    etas = [standing(store, run.id, workers=1, at=t0 + timedelta(seconds=s)).eta_s for s in (110, 140, 180)]
    assert etas == [90.0, 60.0, 20.0]  # down, never up, while elapsed time grows
    overdue = standing(store, run.id, workers=1, at=t0 + timedelta(seconds=260)).eta_s
    assert overdue == 0.0


def test_eta_spreads_pending_jobs_over_the_workers(tmp_path):
    store, run = _campaign(tmp_path, 6)
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    for _ in range(2):
        job = JobQueue(store).claim("w0")
        store.finish_job(job, "done")
        _set_times(store, job.id, t0, t0 + timedelta(seconds=60))
    s = standing(store, run.id, workers=2, at=t0 + timedelta(seconds=60))
    assert s.eta_s == 120.0  # four jobs of 60 s on two workers


def test_crashed_jobs_and_failed_verdicts_are_told_apart(tmp_path):
    store, run = _campaign(tmp_path, 3)
    for status, error in (("done", None), ("done", None), ("failed", "OSError: disk full")):
        store.finish_job(JobQueue(store).claim("w0"), status, error)
    s = standing(store, run.id, workers=1)
    assert (s.done, s.passing, s.not_passing, s.crashed) == (3, 0, 2, 1)
    assert {f.verdict for f in s.finished} == {"no_candidate", "crashed: OSError: disk full"}
