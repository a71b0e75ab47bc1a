"""Campaigns end to end on the CPU: the real CLI in a subprocess, real worker processes, real
evaluations under the Triton interpreter, one real results store. One campaign runs uninterrupted;
the same campaign is killed with SIGKILL once a job is done and resumed, and must end with the same
jobs and verdicts, each job finished once."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest
from campaign_cli import TASKS, kernellab, start_kernellab

from kernellab.run.processes import process_alive
from kernellab.score.store import Store


def campaign_args(recorded: Path, out: Path, *extra: str) -> list[str]:
    return ["run", "--tasks", ",".join(TASKS), "--agent", "replay", "--agent-option",
            f"replay:kernels={recorded}", "--seeds", "2", "--out", str(out), *extra]


def outcome(run_dir: Path) -> dict[str, tuple]:
    """Per job: its status and its final verdict's (status, correct, holdout correct)."""
    with Store.open(run_dir, create=False) as store:
        (run,) = store.runs()
        out = {}
        for job in store.jobs(run.id):
            finals = [a for a in store.attempts(job) if a.final]
            assert len(finals) <= 1, job.key
            v = finals[0].verdict if finals else None
            out[job.key] = (job.status, v.status.value, v.correct, v.holdout.correct) if v else (job.status, None, None,
                                                                                                  None)
        return out


@pytest.fixture(scope="module")
def uninterrupted(recorded, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("campaign") / "run"
    done = kernellab(*campaign_args(recorded, out, "--agent-concurrency", "2"))
    assert done.returncode == 0, done.stderr
    assert "6/6 jobs finished, 2 passing" in done.stdout
    return out


def test_a_campaign_runs_every_job_once_into_one_store(uninterrupted):
    result = outcome(uninterrupted)
    assert len(result) == 6 and all(status == "done" for status, *_ in result.values())
    for key, (_, status, correct, holdout) in result.items():
        if key.startswith("elementwise/relu|"):
            assert (status, correct, holdout) == ("passed", True, True)
        else:
            assert (status, correct) == ("failed", False)
    with Store.open(uninterrupted, create=False) as store:
        (run,) = store.runs()
        assert run.config["command"] == "run" and run.config["mode"] == "interpret"
        assert "correctness only" in run.config["note"] and run.device.startswith("cpu") and run.confined
        for job in store.jobs(run.id):
            assert job.tries == 1
            attempts = store.attempts(job)
            assert [a.iteration for a in attempts if not a.final] == [1]
            assert all(store.kernel_path(a).exists() for a in attempts)
            assert sum(e.kind == "solve" for e in store.events(job)) == 1
            solve_dir = uninterrupted / store.events(job)[-1].payload["dir"]
            assert json.loads((solve_dir / "result.json").read_text())["seed"] == job.seed
    assert {p.name for p in (uninterrupted / "logs").iterdir()} == {"w0.log", "w1.log"}


def test_the_report_renders_on_the_run_dir(uninterrupted):
    done = kernellab("report", str(uninterrupted), "--format", "json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["summary"]["n_results"] == 6
    assert report["summary"]["overall"]["correct_rate"] == pytest.approx(2 / 6)
    assert report["run"]["modes"] == ["interpret"]
    md = kernellab("report", str(uninterrupted), "--format", "md")
    assert md.returncode == 0 and "elementwise/relu" in md.stdout


def test_sigkill_midway_then_resume_ends_as_an_uninterrupted_run(recorded, uninterrupted, tmp_path):
    out = tmp_path / "run"
    proc = start_kernellab(*campaign_args(recorded, out, "--agent-concurrency", "1"))
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        time.sleep(0.3)
        if (out / "results.sqlite").exists():
            with sqlite3.connect(out / "results.sqlite", timeout=30) as db:
                counts = dict(db.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall())
            if counts.get("done", 0) >= 2:
                break
        assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    with Store.open(out, create=False) as store:
        workers = [j for j in store.jobs() if j.worker_pid]
        done_before = {j.key for j in store.jobs() if j.status == "done"}
    assert 2 <= len(done_before) < 6
    time.sleep(1.5)  # the workers notice their orchestrator is gone within half a second
    assert not any(process_alive(j.worker_pid) for j in workers if j.status == "running")

    again = kernellab(*campaign_args(recorded, out, "--agent-concurrency", "2"))
    assert again.returncode == 2 and "pass --resume" in again.stderr and len(again.stderr.splitlines()) == 1
    resumed = kernellab(*campaign_args(recorded, out, "--agent-concurrency", "2", "--resume"))
    assert resumed.returncode == 0, resumed.stderr
    assert "already finished" in resumed.stderr
    assert outcome(out) == outcome(uninterrupted)
    with Store.open(out, create=False) as store:
        for job in store.jobs():
            assert job.status == "done"
            if job.key in done_before:
                assert job.tries == 1  # a finished job is never run again
            assert sum(e.kind == "solve" for e in store.events(job)) == 1
            iterations = [a.iteration for a in store.attempts(job) if not a.final]
            assert iterations == sorted(set(iterations))  # no attempt recorded twice

    nothing_left = kernellab(*campaign_args(recorded, out, "--resume"))
    assert nothing_left.returncode == 0 and "6/6 jobs finished" in nothing_left.stdout


def test_ctrl_c_stops_cleanly_and_resume_finishes(recorded, tmp_path):
    out = tmp_path / "run"
    args = ["run", "--tasks", "elementwise/relu", "--agent", "replay", "--agent-option", f"kernels={recorded}",
            "--seeds", "2", "--out", str(out)]
    proc = start_kernellab(*args)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not list((out / "jobs").glob("*/results.sqlite")):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=120)
    assert proc.returncode in (0, 130)  # 0 when the job in hand was the last
    if proc.returncode == 130:
        assert "continue with --resume" in stdout
    with Store.open(out, create=False) as store:
        assert not store.jobs(status="running")
    resumed = kernellab(*args, "--resume")
    assert resumed.returncode == 0, resumed.stderr
    assert {v[:3] for v in outcome(out).values()} == {("done", "passed", True)}


def test_unusable_input_is_one_line_and_writes_nothing(recorded, tmp_path):
    out = tmp_path / "run"
    for args, message in [
        (["--tasks", "nope/none", "--agent", "replay"], "not a path, a suite id"),
        (["--tasks", "elementwise/relu", "--agent", "nobody"], "unknown agent"),
        (["--tasks", "elementwise/relu", "--agent", "replay", "--strategy", "greedy"], "greedy"),
        (["--tasks", "elementwise/relu", "--agent", "replay", "--agent-option", f"kernels={recorded}",
          "--backend", "slurm"], "not local or ray"),
    ]:
        done = kernellab("run", *args, "--out", str(out))
        assert done.returncode == 2 and message in done.stderr, done.stderr
        assert len(done.stderr.strip().splitlines()) == 1
        assert not out.exists()


def test_resume_of_nothing_is_an_error(tmp_path):
    done = kernellab("run", "--tasks", "elementwise/relu", "--agent", "replay", "--out", str(tmp_path / "x"),
                     "--resume")
    assert done.returncode == 2 and "no campaign to resume" in done.stderr


@pytest.mark.skipif(os.environ.get("CUDA_VISIBLE_DEVICES") not in (None, ""), reason="CPU test")
def test_interpreter_mode_is_chosen_without_a_gpu():
    from kernellab.run.orchestrator import plan_placement

    p = plan_placement(gpus=None, backend="local", address=None, agent_concurrency=None, device="cpu")
    assert p.interpret and p.agent_concurrency == 1 and "correctness only" in p.device
