"""The campaign's job queue (``kernellab.run.queue``) on a real SQLite store: claims in order, one
worker per job, requeueing the jobs of dead workers, and the solve that never claims."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from kernellab.run.queue import JobQueue
from kernellab.score import JobSpec, Store, TaskKind

SPECS = [JobSpec("norm/rmsnorm", "claude", seed, "single", "normalization") for seed in (0, 1)] + [
    JobSpec("gemm/int8", "codex", 0, "keep-revert", "gemm", TaskKind.KERNEL_TO_KERNEL)]


@pytest.fixture
def store(tmp_path):
    with Store.open(tmp_path / "run") as s:
        s.create_run({"tasks": ["norm/rmsnorm"]}, device="cpu", confined=False)
        yield s


@pytest.fixture
def queue(store):
    return JobQueue(store)


@pytest.fixture
def run(store):
    return store.latest_run()


def raw(store: Store) -> sqlite3.Connection:
    """A second, independent connection: what another process would see."""
    return sqlite3.connect(store.path)


def test_enqueue_leaves_a_job_under_way_alone(store, queue, run):
    first = queue.enqueue(run.id, SPECS)
    claimed = queue.claim("w0")
    again = queue.enqueue(run.id, SPECS + [JobSpec("act/gelu", "claude")])
    assert [j.id for j in again[:3]] == [j.id for j in first] and len(store.jobs(run.id)) == 4
    assert store.job(claimed).status == "running" and store.job(claimed).worker == "w0"


def test_claim_in_order_until_empty(store, queue, run):
    jobs = queue.enqueue(run.id, SPECS)
    got = [queue.claim("w0", gpu="0", run_id=run.id) for _ in range(3)]
    assert [j.id for j in got] == [j.id for j in jobs]
    assert all(j.status == "running" and j.worker == "w0" and j.gpu == "0" and j.tries == 1 for j in got)
    assert got[0].worker_pid == os.getpid()
    assert queue.claim("w0") is None
    queue.finish(got[0], "done")
    queue.finish(got[1], "failed", error="agent crashed")
    assert store.status_counts(run.id) == {"pending": 0, "running": 1, "done": 1, "failed": 1}
    assert store.job(got[1]).error == "agent crashed" and store.job(got[1]).finished
    with pytest.raises(ValueError):
        queue.finish(got[2], "running")


def test_requeue(store, queue, run):
    queue.enqueue(run.id, SPECS[:1])
    job = queue.claim("w0")
    back = queue.requeue(job)
    assert back.status == "pending" and back.worker is None
    assert queue.claim("w1").tries == 2


def test_requeue_dead_leaves_live_workers_alone(store, queue, run):
    queue.enqueue(run.id, SPECS[:1])
    queue.claim("w0")  # this process: alive
    assert queue.requeue_dead() == []
    assert store.jobs(status="running")


def test_requeue_dead_requeues_a_dead_local_worker(store, queue, run):
    queue.enqueue(run.id, SPECS[:1])
    job = queue.claim("w0")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    con = raw(store)
    con.execute("UPDATE jobs SET worker_pid = ? WHERE id = ?", (int(dead.stdout), job.id))
    con.commit()
    reset = queue.requeue_dead()
    assert [j.id for j in reset] == [job.id]
    assert store.job(job).status == "pending" and store.job(job).worker_pid is None


def test_requeue_dead_by_heartbeat_for_other_hosts(store, queue, run):
    queue.enqueue(run.id, SPECS[:1])
    job = queue.claim("w0")
    con = raw(store)
    con.execute("UPDATE jobs SET worker_host = 'node-17' WHERE id = ?", (job.id,))
    con.commit()
    assert queue.requeue_dead() == []  # cannot see node-17's processes
    assert queue.requeue_dead(older_than_s=3600) == []  # heartbeat is fresh
    queue.heartbeat(job)
    assert [j.id for j in queue.requeue_dead(older_than_s=0)] == [job.id]
