"""A job as bytes: what a remote worker gets holds no path of the driver's, runs with the driver's task
and kernel folders gone and another working folder, and what it gives back records in the campaign
store like a local worker's job. No Ray: the worker side is plain Python (``remote.NodeWorker``)."""

from __future__ import annotations

import os
import pickle
import shutil
from pathlib import Path

from kernellab.agents.base import registered
from kernellab.run.campaign import CampaignSpec, Placement, open_campaign
from kernellab.run.job import SolveEnd, job_dir, record_solve
from kernellab.run.payload import JobPayload, TaskBundle, shipped_options, unpack_bytes
from kernellab.run.queue import JobQueue
from kernellab.run.remote import NodeWorker
from kernellab.score.store import Store


def test_a_job_runs_from_bytes_alone_and_is_recorded_by_the_driver(recorded, tmp_path, monkeypatch):
    driver = tmp_path / "driver"
    task = driver / "tasks" / "relu"
    shutil.copytree(Path(__file__).parents[2] / "src/kernellab/tasks/suite/elementwise/relu", task)
    kernels = driver / "kernels"
    shutil.copytree(recorded / "elementwise__relu", kernels / "relu")
    spec = CampaignSpec(tasks=(str(task),), agents=("replay",), agent_options={"replay": {"kernels": str(kernels)}})
    run_dir = driver / "run"
    store, run = open_campaign(run_dir, spec, Placement("interpret"), confined=True, confinement={}, resume=False)
    job = JobQueue(store).claim("w0@elsewhere", run_id=run.id)
    options, shipped = shipped_options(registered()["replay"], spec.options_for("replay"))
    assert options == {} and set(shipped) == {"kernels"}
    payload = JobPayload(job.id, job_dir(run_dir, job).name, "replay", 0, spec, TaskBundle.of(str(task)),
                         shipped, True)
    # what travels names no path of the driver's, but for the spec's record of the campaign (its task list, the
    # options as given), which the worker does not read as paths
    wire = pickle.dumps(dataclasses_without_spec(payload))
    assert str(driver).encode() not in wire

    moved = tmp_path / "gone"
    driver.rename(moved)  # the worker's machine has none of the driver's folders
    node = tmp_path / "node"
    node.mkdir()
    monkeypatch.chdir(node)
    worker = NodeWorker(interpret=True, gpu=None, node="elsewhere", scratch=node / "scratch")
    try:
        back = worker.run(payload)
    finally:
        worker.close()
    assert back.status == "passed" and back.error is None and back.node == "elsewhere"
    assert not (node / "scratch").exists()
    moved.rename(driver)

    out = job_dir(run_dir, job)
    unpack_bytes(back.solve, out)
    outcome = record_solve(store, job, out, SolveEnd(back.status, back.error))
    assert outcome.job_status == "done"
    (final,) = [a for a in store.attempts(job) if a.final]
    assert final.verdict.correct and store.kernel_path(final).is_file()
    assert store.kernel_path(final).read_text() == (kernels / "relu" / "iter_1.py").read_text()
    assert store.job(job).worker == "w0@elsewhere"
    # the campaign's job was claimed by the run layer; the solve only recorded its own one job
    with Store.open(out, create=False) as solved:
        (own,) = solved.jobs()
        assert own.status == "done" and own.worker is None and own.worker_pid is None
    store.close()
    with Store.open(out, create=False) as solved:  # the solve's own store came back whole
        assert solved.jobs()[0].task_id == "relu"
    assert not os.listdir(node)


def dataclasses_without_spec(payload: JobPayload) -> JobPayload:
    import dataclasses

    return dataclasses.replace(payload, spec=None)


def test_a_suite_task_keeps_its_id_where_it_is_unpacked(tmp_path):
    from kernellab.run.payload import materialize_task

    ref = "elementwise/relu"
    bundle = TaskBundle.of(ref)
    task = materialize_task(bundle, tmp_path)
    assert task.id == ref and tmp_path in task.root.parents
    assert (task.root / "reference.py").read_bytes() == (Path(__file__).parents[2] / "src/kernellab/tasks/suite"
                                                         / ref / "reference.py").read_bytes()


def test_a_remote_worker_on_a_gpu_takes_that_gpus_lock_for_timings(tmp_path, monkeypatch):
    """A worker of the Ray backend keeps the per-GPU rules of its node: its GPU's lock file (by index,
    in the node's lock folder) is what every timing of its process holds exclusively."""
    import fcntl

    from kernellab.evaluate import gpu_sharing

    monkeypatch.setenv("KERNELLAB_LOCK_DIR", str(tmp_path / "locks"))

    def free(index: int) -> bool:  # what another process would see: a second open file of the lock
        fd = os.open(tmp_path / "locks" / f"gpu-{index}.lock", os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            return False
        finally:
            os.close(fd)

    worker = NodeWorker(interpret=False, gpu=1, node="n", scratch=tmp_path / "scratch")
    try:
        assert worker.where()["gpu"] == 1 and worker.lock.path == tmp_path / "locks" / "gpu-1.lock"
        assert gpu_sharing.has_guards()
        with gpu_sharing.exclusive():
            assert not free(1) and free(0)
        assert free(1)
    finally:
        worker.close()
        gpu_sharing.set_guards(None)
    assert NodeWorker(interpret=True, gpu=1, scratch=tmp_path / "s2").lock is None
