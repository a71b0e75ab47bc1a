"""Jobs per node, jobs per hour and failures by kind, from a real results store."""

from __future__ import annotations

from kernellab.report.fleet import (
    campaign_fleet,
    failure_kind,
    fleet,
    fleet_markdown,
    fleet_rows,
)
from kernellab.run.queue import JobQueue
from kernellab.score.store import Store
from kernellab.score.store_records import JobSpec


def test_failure_kinds_name_the_stage_and_the_reason():
    assert failure_kind({"status": "passed", "correct": True}) is None
    assert failure_kind({"status": "timeout", "failed_stage": "load", "error": "no answer within 5 s"}) == "timeout"
    assert failure_kind({"status": "failed", "failed_stage": "load",
                         "error": "the candidate process was killed by SIGSEGV (segmentation fault): ..."}) \
        == "load: killed by SIGSEGV"
    assert failure_kind({"status": "failed", "failed_stage": "smoke",
                         "error": "the candidate process exited early with status 0"}) == "smoke: exited early"
    assert failure_kind({"status": "failed", "failed_stage": "load",
                         "error": "RuntimeError: DefaultCPUAllocator: can't allocate memory"}) == "load: out of memory"
    assert failure_kind({"status": "failed", "failed_stage": "shape_sweep", "error": "ValueError: bad"}) \
        == "shape_sweep: ValueError"
    assert failure_kind(None) == "no kernel"


def test_the_fleet_of_a_campaign(tmp_path):
    with Store.open(tmp_path) as store:
        run = store.create_run({"command": "run"}, confined=True)
        jobs = store.add_jobs(run.id, [JobSpec(f"t{i}", "replay", 0) for i in range(5)])
        verdicts = [{"status": "passed", "correct": True},
                    {"status": "failed", "correct": False, "failed_stage": "load",
                     "error": "the candidate process was killed by SIGSEGV"},
                    {"status": "failed", "correct": False, "failed_stage": "load",
                     "error": "the candidate process was killed by SIGSEGV"},
                    {"status": "timeout", "correct": False, "failed_stage": "load", "error": "no answer within 5 s"}]
        for i, v in enumerate(verdicts):
            job = JobQueue(store).claim(f"w{i % 2}@node-{'ab'[i % 2]}", run_id=run.id)
            store.record_attempt(job, "k", v, final=True)
            store.finish_job(job, "done")
        store.record_event(jobs[1], "worker_lost", {"try": 1})
        running = JobQueue(store).claim("w0@node-a", run_id=run.id)
        assert running.id == jobs[4].id
        f = fleet(store, run.id)
    assert f.finished_per_node == {"node-a": 2, "node-b": 2} and f.running_per_node == {"node-a": 1}
    assert f.failures == {"load: killed by SIGSEGV": 2, "timeout": 1} and f.workers_lost == 1
    assert f.jobs_per_hour is not None and f.jobs_per_hour > 0
    rows = dict(fleet_rows(f))
    assert rows["nodes"] == "node-a 2 (+1 running) · node-b 2"
    assert rows["failures"] == "load: killed by SIGSEGV 2 · timeout 1" and rows["workers lost"] == "1"
    assert campaign_fleet(tmp_path) == f
    assert "## Workers" in fleet_markdown(tmp_path) and "node-b 2" in fleet_markdown(tmp_path)


def test_a_solve_store_has_no_fleet(tmp_path):
    with Store.open(tmp_path) as store:
        store.create_run({"command": "solve"}, confined=True)
    assert campaign_fleet(tmp_path) is None and fleet_markdown(tmp_path) == ""
    assert campaign_fleet(tmp_path / "nothing") is None
