"""The job queue under several real processes: concurrent claims never share a job, and a worker
killed with SIGKILL mid-write leaves a consistent store whose job is requeued and claimed again."""

from __future__ import annotations

import multiprocessing
import os
import signal
import sqlite3
import time

from kernellab.run.queue import JobQueue
from kernellab.score import AttemptUsage, JobSpec, Store
from kernellab.score.store import DB_NAME

SPAWN = multiprocessing.get_context("spawn")  # a clean interpreter per worker, as a campaign would start


def claim_all(run_dir: str, worker: str, out_path: str, start) -> None:
    """Claim jobs until none is left, recording one attempt each; write the claimed ids to ``out_path``."""
    claimed = []
    with Store.open(run_dir) as store:
        queue = JobQueue(store)
        start.wait(30)  # both workers race from the same moment
        while (job := queue.claim(worker)) is not None:
            claimed.append(job.id)
            time.sleep(0.002)  # "work", so that the two workers interleave
            store.record_attempt(job, f"# {worker} {job.id}\n", None, usage=AttemptUsage(wall_s=0.001))
            queue.finish(job, "done")
    with open(out_path, "w") as f:
        f.write(" ".join(map(str, claimed)))


def test_two_processes_never_claim_the_same_job(tmp_path):
    with Store.open(tmp_path) as store:
        run = store.create_run({}, confined=False)
        jobs = store.add_jobs(run.id, [JobSpec(f"task{i:02d}", "agent") for i in range(40)])
    outs = [tmp_path / f"w{i}.txt" for i in range(2)]
    start = SPAWN.Barrier(2)
    procs = [SPAWN.Process(target=claim_all, args=(str(tmp_path), f"w{i}", str(outs[i]), start)) for i in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    claimed = [[int(x) for x in out.read_text().split()] for out in outs]
    assert claimed[0] and claimed[1], "one worker took everything: the test did not race"
    assert not set(claimed[0]) & set(claimed[1])
    assert sorted(claimed[0] + claimed[1]) == sorted(j.id for j in jobs)
    with Store.open(tmp_path) as store:
        assert store.status_counts(run.id)["done"] == 40
        # one attempt per job: no job was worked twice
        assert sorted(a.job_id for a in store.attempts()) == sorted(j.id for j in jobs)


def busy_worker(run_dir: str, ready) -> None:
    """Claim one job and record attempts with verdicts as fast as possible, until killed."""
    timing = {"config": "M=1", "dtype": "float32", "phase": "forward", "method": "events", "samples": 10,
              "candidate_us": 1.0, "ci95_us": [0.9, 1.1], "speedup_vs_eager": 2.0}
    verdict = {"status": "passed", "compiled": True, "correct": True, "failed_stage": None,
               "speedup": {"vs_eager": 2.0, "vs_compile": None, "vs_baseline": None},
               "timings": [timing] * 8, "holdout": {"correct": True, "timings": [timing] * 4}}
    with Store.open(run_dir) as store:
        job = JobQueue(store).claim("doomed")
        i = 0
        while True:
            store.record_attempt(job, f"# proposal {i}\n" * 50, verdict)
            store.record_event(job, "proposal", {"i": i})
            i += 1
            if i == 5:
                ready.set()


def test_sigkill_mid_run_leaves_a_consistent_store_and_the_job_is_requeued(tmp_path):
    with Store.open(tmp_path) as store:
        run = store.create_run({}, confined=False)
        job = store.add_jobs(run.id, [JobSpec("norm/rmsnorm", "agent"), JobSpec("act/gelu", "agent")])[0]
    ready = SPAWN.Event()
    proc = SPAWN.Process(target=busy_worker, args=(str(tmp_path), ready))
    proc.start()
    assert ready.wait(60), "the worker never got going"
    os.kill(proc.pid, signal.SIGKILL)  # mid-write, most likely inside a transaction
    proc.join(10)
    assert proc.exitcode == -signal.SIGKILL

    con = sqlite3.connect(tmp_path / DB_NAME)
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # every attempt landed whole: exactly one verdict, all 12 timings, its kernel file present
    n_attempts = con.execute("SELECT count(*) FROM attempts").fetchone()[0]
    assert n_attempts >= 5
    per_attempt = con.execute(
        "SELECT a.id, a.artifact, count(DISTINCT v.id), count(t.id) FROM attempts a "
        "LEFT JOIN verdicts v ON v.attempt_id = a.id LEFT JOIN timings t ON t.verdict_id = v.id "
        "GROUP BY a.id").fetchall()
    assert all(n_verdicts == 1 and n_timings == 12 for _, _, n_verdicts, n_timings in per_attempt)
    assert all((tmp_path / artifact).is_file() for _, artifact, _, _ in per_attempt)
    con.close()

    with Store.open(tmp_path) as store:
        assert store.job(job).status == "running"
        queue = JobQueue(store)
        reset = queue.requeue_dead()
        assert [j.id for j in reset] == [job.id]
        again = queue.claim("survivor")
        assert again.id == job.id and again.tries == 2  # the oldest pending job, taken up again
        assert len(store.attempts(job)) == n_attempts  # its earlier attempts are kept for resuming
        assert store.job(job).status == "running" and store.job(job).worker == "survivor"
