"""The campaign's standing, read from its results store: jobs done, passing, best speedups, ETA —
as a rich live panel on a terminal, and one line per finished job either way."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Self

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table

from kernellab.report.cells import plural
from kernellab.report.fleet import fleet, fleet_rows
from kernellab.score.from_store import scoring_attempt
from kernellab.score.store import Store
from kernellab.score.store_records import JobStatus


@dataclass(frozen=True)
class JobLine:
    job_id: int
    key: str
    status: str  # job status
    verdict: str  # the scoring verdict's status, "no_candidate", or "crashed: <the error>"
    correct: bool
    speedup: float | None


@dataclass(frozen=True)
class Standing:
    """``counts`` are job statuses: a job whose verdict failed is ``done``; ``failed`` is a job that
    crashed (its worker or the solve itself raised), shown as "crashed" so the two never share a word."""

    total: int
    counts: dict[str, int]
    passing: int
    finished: tuple[JobLine, ...]
    best: dict[str, float] = field(default_factory=dict)  # task -> best speedup vs eager of a passing job
    eta_s: float | None = None

    @property
    def done(self) -> int:
        return self.counts.get("done", 0) + self.counts.get("failed", 0)

    @property
    def crashed(self) -> int:
        return self.counts.get("failed", 0)

    @property
    def not_passing(self) -> int:
        """Jobs that finished with a verdict that did not pass (or no kernel)."""
        return sum(1 for f in self.finished if f.status == "done" and not f.correct)


def standing(store: Store, run_id: int, *, workers: int, at: datetime | None = None) -> Standing:
    """Where the campaign stands (``at``: now, in the store's clock)."""
    with store.snapshot():
        jobs = store.jobs(run_id)
        by_job: dict[int, list] = {}
        for a in store.attempts(run_id=run_id):
            by_job.setdefault(a.job_id, []).append(a)
    counts = {s: sum(1 for j in jobs if j.status is s) for s in JobStatus}
    finished, best = [], {}
    for j in jobs:
        if not j.status.finished:
            continue
        chosen = scoring_attempt(by_job.get(j.id, []))
        v = chosen.verdict if chosen is not None else None
        correct = v is not None and v.correct
        speedup = v.speedup_vs_eager if v is not None else None
        verdict = f"crashed: {j.error or 'no reason recorded'}" if j.status == JobStatus.FAILED \
            else v.status.value if v is not None else "no_candidate"
        finished.append(JobLine(j.id, j.key, j.status, str(verdict), correct, speedup))
        if correct and speedup is not None and speedup > best.get(j.task_id, 0.0):
            best[j.task_id] = speedup
    eta = estimate_eta(jobs, workers, at or datetime.now(UTC))
    return Standing(len(jobs), counts, sum(1 for f in finished if f.correct), tuple(finished), best, eta)


def estimate_eta(jobs: list, workers: int, now: datetime) -> float | None:
    """Seconds until the last job finishes: each job takes the mean time the finished jobs took; a
    running job has that less the time it has run (never below zero) left; the jobs left are spread
    over the workers, and nothing ends before the running job with the most left. None until a job
    has finished. It counts down while jobs run, the last one included."""
    took = [_seconds(j.finished) - _seconds(j.started) for j in jobs
            if j.status in ("done", "failed") and j.started and j.finished]
    left_jobs = [j for j in jobs if j.status in ("pending", "running")]
    if not took or not left_jobs:
        return None
    mean = sum(took) / len(took)
    clock = now.timestamp()
    running = [max(0.0, mean - (clock - _seconds(j.started))) if j.started else mean
               for j in left_jobs if j.status == "running"]
    pending = sum(1 for j in left_jobs if j.status == "pending")
    work = sum(running) + pending * mean
    return max(max(running, default=0.0), work / max(1, min(workers, len(left_jobs))))


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


class CampaignProgress:
    """Polls the store (``tick``) and shows the standing; prints each job as it finishes."""

    def __init__(self, store: Store, run_id: int, console: Console, title: str, workers: int) -> None:
        self.store, self.run_id, self.console, self.title, self.workers = store, run_id, console, title, workers
        first = standing(store, run_id, workers=workers)
        self.seen = {f.job_id for f in first.finished}
        self.last = first
        self.live: Live | None = None
        self.fleet_at, self.fleet_rows = 0.0, fleet_rows(fleet(store, run_id))

    def __enter__(self) -> Self:
        if self.console.is_terminal:
            self.live = Live(self.render(), console=self.console, refresh_per_second=2, transient=False)
            self.live.__enter__()
        else:
            self.console.print(f"run {self.title}: {plural(self.last.total, 'job')}, {self.last.done} already finished",
                               markup=False, highlight=False)
        return self

    def __exit__(self, *exc: object) -> None:
        self.tick()
        if self.live is not None:
            self.live.__exit__(None, None, None)
        else:
            self.fleet_rows = fleet_rows(fleet(self.store, self.run_id))
            self.console.print(" · ".join(f"{k}: {v}" for k, v in self.fleet_rows), markup=False, highlight=False)

    def tick(self) -> Standing:
        s = standing(self.store, self.run_id, workers=self.workers)
        for f in s.finished:
            if f.job_id not in self.seen:
                # numbered as printed: jobs that finished between two polls get consecutive numbers
                self.seen.add(f.job_id)
                self.console.print(job_line(f, len(self.seen), s.total), markup=False, highlight=False)
        self.last = s
        if self.live is not None and time.monotonic() - self.fleet_at > 5:  # per node, rate, failures by kind
            self.fleet_at, self.fleet_rows = time.monotonic(), fleet_rows(fleet(self.store, self.run_id))
        if self.live is not None:
            self.live.update(self.render())
        return s

    def render(self) -> Panel:
        s = self.last
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()
        grid.add_row("jobs", f"{s.done}/{s.total} finished · {s.counts.get('running', 0)} running · "
                             f"{s.counts.get('pending', 0)} pending · {s.crashed} crashed")
        grid.add_row("passing", f"{s.passing} of {s.done}, {s.not_passing} not passing")
        top = sorted(s.best.items(), key=lambda kv: -kv[1])[:5]
        grid.add_row("best", " · ".join(f"{t} x{v:.2f}" for t, v in top) or "—")
        grid.add_row("eta", format_eta(s.eta_s))
        for label, text in self.fleet_rows:
            grid.add_row(label, text)
        return Panel(Group(grid), title=f"run {self.title}")


def job_line(f: JobLine, number: int, total: int) -> str:
    speed = f" x{f.speedup:.2f}" if f.speedup else ""
    return f"[{number}/{total}] {f.key}: {f.verdict}{' (correct)' if f.correct else ''}{speed}"


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"
