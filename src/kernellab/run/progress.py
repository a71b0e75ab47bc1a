"""The campaign's standing, read from its results store: jobs done, passing, best speedups, ETA —
as a rich live panel on a terminal, and one line per finished job either way."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Self

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table

from kernellab.score.from_store import scoring_attempt
from kernellab.score.store import Store
from kernellab.score.store_records import JobStatus


@dataclass(frozen=True)
class JobLine:
    job_id: int
    key: str
    status: str  # job status
    verdict: str  # the scoring verdict's status, or "no_candidate" / the error
    correct: bool
    speedup: float | None


@dataclass(frozen=True)
class Standing:
    total: int
    counts: dict[str, int]
    passing: int
    finished: tuple[JobLine, ...]
    best: dict[str, float] = field(default_factory=dict)  # task -> best speedup vs eager of a passing job
    eta_s: float | None = None

    @property
    def done(self) -> int:
        return self.counts.get("done", 0) + self.counts.get("failed", 0)


def standing(store: Store, run_id: int, *, started: float, done_at_start: int, workers: int) -> Standing:
    """Where the campaign stands. ETA: the mean wall time of the jobs finished in this session × the
    jobs left ÷ the workers (None until one has finished)."""
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
        verdict = v.status.value if v is not None else (j.error if j.status is JobStatus.FAILED else "no_candidate")
        finished.append(JobLine(j.id, j.key, j.status, str(verdict), correct, speedup))
        if correct and speedup is not None and speedup > best.get(j.task_id, 0.0):
            best[j.task_id] = speedup
    total = len(jobs)
    done = counts["done"] + counts["failed"]
    eta = None
    here = done - done_at_start
    if here > 0 and total > done:
        eta = (time.monotonic() - started) / here * (total - done) / max(1, min(workers, total - done))
    return Standing(total, counts, sum(1 for f in finished if f.correct), tuple(finished), best, eta)


class CampaignProgress:
    """Polls the store (``tick``) and shows the standing; prints each job as it finishes."""

    def __init__(self, store: Store, run_id: int, console: Console, title: str, workers: int) -> None:
        self.store, self.run_id, self.console, self.title, self.workers = store, run_id, console, title, workers
        self.started = time.monotonic()
        first = standing(store, run_id, started=self.started, done_at_start=0, workers=workers)
        self.done_at_start = first.done
        self.seen = {f.job_id for f in first.finished}
        self.last = first
        self.live: Live | None = None

    def __enter__(self) -> Self:
        if self.console.is_terminal:
            self.live = Live(self.render(), console=self.console, refresh_per_second=2, transient=False)
            self.live.__enter__()
        else:
            self.console.print(f"run {self.title}: {self.last.total} jobs, {self.last.done} already finished",
                               markup=False, highlight=False)
        return self

    def __exit__(self, *exc: object) -> None:
        self.tick()
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def tick(self) -> Standing:
        s = standing(self.store, self.run_id, started=self.started, done_at_start=self.done_at_start,
                     workers=self.workers)
        for f in s.finished:
            if f.job_id not in self.seen:
                self.seen.add(f.job_id)
                self.console.print(job_line(f, s), markup=False, highlight=False)
        self.last = s
        if self.live is not None:
            self.live.update(self.render())
        return s

    def render(self) -> Panel:
        s = self.last
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()
        grid.add_row("jobs", f"{s.done}/{s.total} finished · {s.counts.get('running', 0)} running · "
                             f"{s.counts.get('pending', 0)} pending · {s.counts.get('failed', 0)} failed")
        grid.add_row("passing", f"{s.passing} of {s.done}")
        top = sorted(s.best.items(), key=lambda kv: -kv[1])[:5]
        grid.add_row("best", " · ".join(f"{t} x{v:.2f}" for t, v in top) or "—")
        grid.add_row("eta", format_eta(s.eta_s))
        return Panel(Group(grid), title=f"run {self.title}")


def job_line(f: JobLine, s: Standing) -> str:
    speed = f" x{f.speedup:.2f}" if f.speedup else ""
    return f"[{s.done}/{s.total}] {f.key}: {f.verdict}{' (correct)' if f.correct else ''}{speed}"


def format_eta(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"
