"""The campaign's job queue, over the jobs table of its results store.

Which job runs next, on which worker, and what happens to a job whose worker is gone are questions
of the run layer, so they live here; the store (``kernellab.score.Store``) only records jobs and what
became of them (``add_jobs``, ``set_job_status``), as it records attempts and verdicts. A solve
(``kernellab.agents``) never takes a job from a queue: it records its own one job in its own store.

- ``claim`` selects the oldest pending job and marks it running for a worker inside one write
  transaction (``BEGIN IMMEDIATE``), so two workers, in any processes, never get the same job.
- A running job names its worker's host, pid and process start time, and beats a heartbeat.
- ``requeue_dead`` puts back to pending the running jobs whose worker is gone: on this host, its
  process no longer exists (or its pid now names a later process); elsewhere, its heartbeat is older
  than a limit. The attempts a job recorded stay, so a resumed job can continue from them.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta

from kernellab.run.processes import process_alive, process_start
from kernellab.score.store import Store, now
from kernellab.score.store_records import JobRecord, JobSpec, JobStatus

log = logging.getLogger(__name__)


class JobQueue:
    """The jobs of the campaign store ``store`` as a queue. Like the ``Store`` it wraps, one per
    process (and thread)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def enqueue(self, run_id: int, specs: Iterable[JobSpec]) -> list[JobRecord]:
        """Add jobs as pending; a job already there (same key) is left as it is, finished or not."""
        return self.store.add_jobs(run_id, specs)

    def claim(self, worker: str, *, gpu: str | None = None, run_id: int | None = None) -> JobRecord | None:
        """Atomically take the oldest pending job and mark it running for ``worker`` (this process);
        None when none is left."""
        host, pid = socket.gethostname(), os.getpid()
        with self.store.transaction() as c:
            sql = "SELECT id FROM jobs WHERE status = 'pending'" + (" AND run_id = ?" if run_id is not None else "")
            row = c.execute(sql + " ORDER BY id LIMIT 1", () if run_id is None else (run_id,)).fetchone()
            if row is None:
                return None
            self.store.set_job_status(row["id"], JobStatus.RUNNING)
            c.execute("UPDATE jobs SET worker = ?, gpu = ?, worker_host = ?, worker_pid = ?, worker_started = ?, "
                      "heartbeat = ? WHERE id = ?", (worker, gpu, host, pid, process_start(pid), now(), row["id"]))
            return self.store.job(row["id"])

    def heartbeat(self, job: JobRecord | int) -> None:
        """The worker of ``job`` is alive (``requeue_dead`` reads this for workers on other hosts)."""
        with self.store.transaction() as c:
            c.execute("UPDATE jobs SET heartbeat = ? WHERE id = ?", (now(), _id(job)))

    def finish(self, job: JobRecord | int, status: str, error: str | None = None) -> JobRecord:
        """``done`` (the agent's result, whatever its verdict) or ``failed`` (the job itself broke)."""
        return self.store.finish_job(job, status, error)

    def requeue(self, job: JobRecord | int) -> JobRecord:
        """Put a job back to pending (a worker giving it up cleanly); its attempts stay."""
        return self.store.set_job_status(job, JobStatus.PENDING)

    def requeue_dead(self, *, older_than_s: float | None = None, run_id: int | None = None) -> list[JobRecord]:
        """Put back to pending the running jobs whose worker is gone, and return them.

        A worker is gone when it ran on this host and its process no longer exists (or its pid now
        belongs to a process started later), or, for workers on other hosts, whose processes cannot
        be seen from here, when ``older_than_s`` is given and its last heartbeat is older than that.
        A live worker's job is never taken from it by the first rule.
        """
        host = socket.gethostname()
        cutoff = None
        if older_than_s is not None:
            cutoff = (datetime.now(UTC) - timedelta(seconds=older_than_s)).isoformat(timespec="microseconds")
        reset = []
        with self.store.transaction() as c:
            for row in c.execute("SELECT * FROM jobs WHERE status = 'running'" +
                                 (" AND run_id = ?" if run_id is not None else ""),
                                 () if run_id is None else (run_id,)).fetchall():
                gone = (row["worker_host"] == host and row["worker_pid"] is not None
                        and not process_alive(row["worker_pid"], row["worker_started"]))
                stale = cutoff is not None and (row["heartbeat"] or "") < cutoff
                if gone or stale:
                    reset.append((self.store.set_job_status(row["id"], JobStatus.PENDING), row["worker"]))
        for job, worker in reset:
            log.info("job %s (%s) requeued: its worker %s is gone", job.id, job.key, worker)
        return [job for job, _ in reset]


def _id(job: JobRecord | int) -> int:
    return job.id if isinstance(job, JobRecord) else int(job)
