"""The Ray backend on a cluster of two nodes on this machine (two ``ray start`` processes, separate
temporary and working folders, none of them the run folder), one node SIGKILLed once half the jobs
are finished. Every job must finish, be stored once, and end with the verdict it has in an
uninterrupted campaign (the local backend's); the job that was on the killed node is re-run, its
lost try recorded. CPU only (Triton interpreter), in CI with the ``ray`` extra."""

from __future__ import annotations

import importlib.util
import json
import sqlite3
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from campaign_cli import TASKS, kernellab

from kernellab.score.store import Store

HAS_RAY = importlib.util.find_spec("ray") is not None
pytestmark = [pytest.mark.skipif(not HAS_RAY, reason="the optional extra 'ray' is not installed"),
              pytest.mark.slow]


def campaign(recorded: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--tasks", ",".join(TASKS), "--agent", "replay", "--agent-option", f"replay:kernels={recorded}",
            "--seeds", "2", "--agent-concurrency", "2", "--out", str(out), *extra]


def verdicts(run_dir: Path) -> dict[str, tuple]:
    """Per job: its status and final verdict (status, correct, holdout correct); each job's solve
    stored once (one ``solve`` event, at most one final attempt)."""
    with Store.open(run_dir, create=False) as store:
        (run,) = store.runs()
        out = {}
        for job in store.jobs(run.id):
            finals = [a for a in store.attempts(job) if a.final]
            assert len(finals) <= 1, job.key
            assert sum(e.kind == "solve" for e in store.events(job)) == 1, job.key
            v = finals[0].verdict if finals else None
            out[job.key] = (job.status, v.status.value, v.correct, v.holdout.correct) if v is not None \
                else (job.status, None, None, None)
        return out


def read_jobs(db: Path) -> list[dict]:
    """The jobs table, read-only (the driver is writing it)."""
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5) as c:
            c.row_factory = sqlite3.Row
            return [dict(r) for r in c.execute("SELECT * FROM jobs")]
    except sqlite3.Error:
        return []


@pytest.mark.timeout(900)
def test_a_node_killed_at_half_loses_no_job(recorded, tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from ray_cluster import cluster_env, start_cluster

    local = kernellab(*campaign(recorded, tmp_path / "local"))
    assert local.returncode == 0, local.stderr
    expected = verdicts(tmp_path / "local")
    assert len(expected) == 6

    cluster = start_cluster((2, 1))
    try:
        _, node_b = cluster.nodes
        b_id = node_b.node_id()[:8]
        out = tmp_path / "ray"
        driver = subprocess.Popen([sys.executable, "-m", "kernellab.cli.main",
                                   *campaign(recorded, out, "--backend", "ray", "--address", cluster.address)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cluster_env(),
                                  cwd=tmp_path)
        killed_with = None
        deadline = time.monotonic() + 600
        while driver.poll() is None and time.monotonic() < deadline:
            jobs = read_jobs(out / "results.sqlite")
            done = sum(j["status"] in ("done", "failed") for j in jobs)
            # a job that started on B within the last second: it is still running when the kill lands
            fresh = (datetime.now(UTC) - timedelta(seconds=1)).isoformat(timespec="microseconds")
            on_b = [j for j in jobs if j["status"] == "running" and (j["worker"] or "").endswith(b_id)
                    and (j["started"] or "") > fresh]
            if killed_with is None and jobs and done >= len(jobs) // 2 and on_b:
                node_b.kill()
                killed_with = {"done": done, "on_b": [j["id"] for j in on_b]}
            time.sleep(0.1)
        stdout, stderr = driver.communicate(timeout=60)
    finally:
        cluster.stop()
    assert killed_with is not None, f"node B never held a job at half: {stdout}\n{stderr}"
    assert driver.returncode == 0, stderr

    assert verdicts(out) == expected
    with Store.open(out, create=False) as store:
        (run,) = store.runs()
        assert run.config["placement"]["backend"] == "ray"
        jobs = {j.id: j for j in store.jobs(run.id)}
        lost = {j: [e.payload for e in store.events(j, "worker_lost")] for j in jobs}
        for job_id in killed_with["on_b"]:  # the job on the killed node: lost once, run again elsewhere
            (entry,) = lost[job_id]
            assert entry["try"] == 1 and entry["node"].endswith(b_id)
            assert jobs[job_id].tries == 2 and not jobs[job_id].worker.endswith(b_id)
        assert all(not lost[j] and jobs[j].tries == 1 for j in jobs if j not in killed_with["on_b"])
        for job in jobs.values():  # every solve ran in a worker's own scratch folder and came back as bytes
            (solve,) = store.events(job, "solve")
            folder = out / solve.payload["dir"]
            result = json.loads((folder / "result.json").read_text())
            assert not result["paths"]["out"].startswith(str(out)) and result["paths"]["out"] != str(folder)
            assert all(store.kernel_path(a).is_file() for a in store.attempts(job))
        nodes = {j.worker.split("@", 1)[1] for j in jobs.values()}
    assert len(nodes) == 2  # both nodes ran jobs
    assert "report: kernellab report" in stdout


@pytest.mark.timeout(900)
def test_a_driver_killed_with_sigkill_resumes_without_repeating_what_was_stored(recorded, tmp_path):
    sys.path.insert(0, str(Path(__file__).parent))
    from ray_cluster import cluster_env, start_cluster

    cluster = start_cluster((2,))
    try:
        out = tmp_path / "ray"
        args = campaign(recorded, out, "--backend", "ray", "--address", cluster.address)
        driver = subprocess.Popen([sys.executable, "-m", "kernellab.cli.main", *args], stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL, env=cluster_env(), cwd=tmp_path)
        stored: dict[int, dict] = {}
        deadline = time.monotonic() + 600
        while driver.poll() is None and time.monotonic() < deadline:
            jobs = read_jobs(out / "results.sqlite")
            if sum(j["status"] == "done" for j in jobs) >= 2:
                driver.kill()
                driver.wait()
                break
            time.sleep(0.1)
        assert driver.returncode == -9, "the campaign ended before the kill"
        stored = {j["id"]: j for j in read_jobs(out / "results.sqlite") if j["status"] == "done"}
        assert 2 <= len(stored) < 6
        resumed = subprocess.run([sys.executable, "-m", "kernellab.cli.main", *args, "--resume"], check=False,
                                 capture_output=True,
                                 text=True, env=cluster_env(), cwd=tmp_path, timeout=600)
    finally:
        cluster.stop()
    assert resumed.returncode == 0, resumed.stderr
    result = verdicts(out)
    assert all(status == "done" for status, *_ in result.values()) and len(result) == 6
    for key, (_, status, correct, _) in result.items():
        assert (status, correct) == (("passed", True) if key.startswith("elementwise/relu|") else ("failed", False))
    with Store.open(out, create=False) as store:
        for job in store.jobs():
            if job.id in stored:  # finished before the kill: never run again
                assert job.tries == 1 and job.finished == stored[job.id]["finished"], job.key
