"""Where a campaign's jobs ran and how they failed: jobs per node, jobs per hour, failures by kind,
workers lost. Read from the results store alone, for the live progress of ``kernellab run`` and the
"Workers" section of a report.

A job's node is the part of its worker's name after ``@`` (the Ray backend names workers
``w3@host:node-id``), else the host its worker ran on (the local backend). A failure's kind is the
stage its verdict failed at and a short reason (``load: killed by SIGSEGV``, ``smoke: exited early``,
``timeout``), ``solve error`` for a job whose solve raised, and lost workers count apart: their jobs
ran again.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from kernellab.score.store import Store, StoreError
from kernellab.score.store_records import JobRecord

WORKER_LOST = "worker_lost"  # the event the Ray backend records for a try whose worker died
_REASONS = (
    (re.compile(r"killed by (SIG[A-Z0-9]+)"), lambda m: f"killed by {m.group(1)}"),
    (re.compile(r"exited early"), lambda m: "exited early"),
    (re.compile(r"out of memory|can't allocate memory|OutOfMemory", re.IGNORECASE), lambda m: "out of memory"),
    (re.compile(r"no answer within"), lambda m: "hang"),
    (re.compile(r"^([A-Za-z_][A-Za-z0-9_.]*)(?::|\s*\()"), lambda m: m.group(1)),
)


@dataclass(frozen=True)
class Fleet:
    """The distribution of a campaign over its workers' nodes."""

    finished_per_node: dict[str, int] = field(default_factory=dict)
    running_per_node: dict[str, int] = field(default_factory=dict)
    failures: dict[str, int] = field(default_factory=dict)  # kind -> jobs
    workers_lost: int = 0  # tries whose worker died (their jobs were run again or failed)
    jobs_per_hour: float | None = None  # finished jobs over the span from the first start to the last finish

    def to_dict(self) -> dict[str, Any]:
        return {"finished_per_node": self.finished_per_node, "running_per_node": self.running_per_node,
                "failures": self.failures, "workers_lost": self.workers_lost, "jobs_per_hour": self.jobs_per_hour}


def node_of(job: JobRecord) -> str:
    if job.worker and "@" in job.worker:
        return job.worker.split("@", 1)[1]
    return job.worker_host or "?"


def failure_kind(verdict: dict[str, Any] | None) -> str | None:
    """None for a verdict that passed; else where and why it failed, in a few words."""
    if not verdict:
        return "no kernel"
    status = verdict.get("status")
    if status == "passed" or verdict.get("correct"):
        return None
    if status == "timeout":
        return "timeout"
    error = (verdict.get("error") or "").strip()
    reason = status or "failed"
    for pattern, name in _REASONS:
        match = pattern.search(error)
        if match:
            reason = name(match)
            break
    stage = verdict.get("failed_stage")
    return f"{stage}: {reason}" if stage else reason


def fleet(store: Store, run_id: int) -> Fleet:
    """The fleet of run ``run_id`` as stored now."""
    with store.snapshot() as c:
        jobs = store.jobs(run_id)
        finals = {a.job_id: a.verdict.to_dict() if a.verdict is not None else None
                  for a in store.attempts(run_id=run_id) if a.final}
        lost = c.execute("SELECT count(*) FROM events e JOIN jobs j ON j.id = e.job_id "
                         "WHERE j.run_id = ? AND e.kind = ?", (run_id, WORKER_LOST)).fetchone()[0]
    finished, running, failures = Counter(), Counter(), Counter()
    starts, ends = [], []
    for job in jobs:
        if job.status == "running":
            running[node_of(job)] += 1
        if job.status not in ("done", "failed"):
            continue
        finished[node_of(job)] += 1
        kind = "solve error" if job.status == "failed" else failure_kind(finals.get(job.id))
        if kind is not None:
            failures[kind] += 1
        if job.started and job.finished:
            starts.append(job.started)
            ends.append(job.finished)
    rate = None
    if starts:
        span = (datetime.fromisoformat(max(ends)) - datetime.fromisoformat(min(starts))).total_seconds()
        rate = round(len(ends) / span * 3600, 1) if span > 0 else None
    return Fleet(dict(finished.most_common()), dict(running.most_common()), dict(failures.most_common()), lost, rate)


def fleet_rows(f: Fleet) -> list[tuple[str, str]]:
    """(label, text) rows: nodes, jobs per hour, failures by kind, workers lost."""
    nodes = sorted(set(f.finished_per_node) | set(f.running_per_node))
    shown = " · ".join(f"{n} {f.finished_per_node.get(n, 0)}"
                       + (f" (+{f.running_per_node[n]} running)" if f.running_per_node.get(n) else "") for n in nodes)
    failures = " · ".join(f"{kind} {n}" for kind, n in f.failures.items())
    return [("nodes", shown or "—"), ("rate", f"{f.jobs_per_hour:.0f} jobs/hour" if f.jobs_per_hour else "—"),
            ("failures", failures or "none"), ("workers lost", str(f.workers_lost))]


def campaign_fleet(run_dir: Any) -> Fleet | None:
    """The fleet of the latest campaign (``kernellab run``) in ``run_dir``; None for a solve's store."""
    try:
        with Store.open(run_dir, create=False) as store:
            run = store.latest_run()
            if run is None or run.config.get("command") != "run":
                return None
            return fleet(store, run.id)
    except (StoreError, OSError):  # no store there (a report built from records alone)
        return None


def fleet_markdown(run_dir: Any) -> str:
    """The report's "Workers" section (empty for a store that holds no campaign)."""
    f = campaign_fleet(run_dir)
    if f is None:
        return ""
    return "\n".join(["## Workers", "", "| | |", "|---|---|", *(f"| {k} | {v} |" for k, v in fleet_rows(f)), ""])
