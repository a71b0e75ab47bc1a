"""``kernellab solve`` as a user runs it: a separate process, the Triton interpreter on the CPU, the
replay agent over recorded ReLU kernels (one wrong, one correct, one correct variant)."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
sys.path.insert(0, str(ROOT / "tests" / "agents"))

from test_solve import GOOD, TASK, VARIANT, WRONG


def kernellab(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "kernellab.cli.main", *args], capture_output=True, text=True,
                          timeout=timeout, env=env, check=False, **kw)


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    folder = tmp_path / "recorded" / TASK.replace("/", "__")
    folder.mkdir(parents=True)
    for i, source in enumerate((WRONG, GOOD, VARIANT), 1):
        (folder / f"iter_{i}.py").write_text(source)
    return folder.parent


def test_solve_end_to_end_prints_the_result_document(tmp_path, recorded):
    out = tmp_path / "out"
    done = kernellab("solve", "--task", TASK, "--agent", "replay", "--agent-option", f"kernels={recorded}",
                     "--strategy", "keep-revert", "--strategy-option", "patience=2", "--budget", "10it,30m",
                     "--out", str(out), "--seed", "3", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)  # stdout is exactly one JSON document
    assert document == json.loads((out / "result.json").read_text())
    assert document["status"] == "passed" and document["strategy"] == "keep-revert" and document["seed"] == 3
    assert document["best"] == {"candidate": "c2", "iteration": 2, "path": "best_kernel.py"}
    assert document["final_verdict"]["holdout"]["correct"] is True
    assert document["stop"]["rule"] == "patience" and document["confined"] is True
    lines = done.stderr.splitlines()
    assert lines[0] == f"solve {TASK} · replay · keep-revert · budget 1800s,10it"
    assert "[1] c1: failed at smoke: " in done.stderr and "— revert: incorrect (failed at smoke)" in done.stderr
    assert "[2] c2: passed (not timed) — keep: the first correct kernel" in lines
    assert (out / "best_kernel.py").read_text() == GOOD
    with sqlite3.connect(out / "results.sqlite") as db:
        rows = db.execute("SELECT iteration, kept, final FROM attempts ORDER BY iteration, id").fetchall()
    assert rows == [(1, 0, 0), (2, 1, 0), (2, 0, 1), (3, 0, 0), (4, 0, 0)]


def test_solve_prints_a_readable_summary(tmp_path, recorded):
    out = tmp_path / "out"
    done = kernellab("solve", "--task", TASK, "--agent", "replay", "--agent-option", f"kernels={recorded}",
                     "--out", str(out))
    assert done.returncode == 1, done.stderr  # single: the one proposal is the wrong kernel
    assert done.stdout.splitlines()[0] == f"failed  {TASK} · replay · single · seed 0"
    assert "final verdict: failed, correct=False, holdout not run, not timed (interpreter)" in done.stdout
    assert "confined; trajectory " in done.stdout
    assert json.loads((out / "result.json").read_text())["exit_code"] == 1


def test_a_bad_budget_is_one_line_and_exit_2(tmp_path, recorded):
    out = tmp_path / "out"
    done = kernellab("solve", "--task", TASK, "--agent", "replay", "--agent-option", f"kernels={recorded}",
                     "--out", str(out), "--budget", "5x")
    assert done.returncode == 2 and done.stdout == "" and not out.exists()
    assert done.stderr == ("error: --budget '5x' is not understood: use e.g. 30m, 90s, 2h, $5, 50it or several "
                           "joined by commas\n")


@pytest.mark.parametrize(("options", "message"), [
    ({"agent_option": ["kernels"]}, "error: --agent-option 'kernels' is not key=value"),
    ({"strategy": "greedy"}, "error: unknown strategy 'greedy'; known: best-of-n, evolve, keep-revert, single"),
    ({"strategy": "keep-revert", "strategy_option": ["patience=soon"]},
     "error: strategy keep-revert: option patience must be a number, not 'soon'"),
    ({"agent": "gpt"}, "error: unknown agent 'gpt'; known: "),
    ({"out": "in-use"}, "already holds a solve (results.sqlite); pass --resume to continue it, or choose another --out"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, recorded, capsys, options, message):
    import typer

    from kernellab.cli.solve_cmd import solve_command

    out = tmp_path / "out"
    if options.pop("out", None):
        out.mkdir()
        (out / "results.sqlite").write_text("")
    given = {"task": TASK, "agent": "replay", "out": out, "agent_option": [f"kernels={recorded}"],
             "strategy": "single", "strategy_option": None, "budget": None, "no_confine": False, "seed": 0,
             "device": None, "resume": False, "as_json": False, "debug": False, **options}
    with pytest.raises(typer.Exit) as exit_info:
        solve_command(**given)
    assert exit_info.value.exit_code == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1 and message in captured.err
    assert captured.err.startswith("error: ")
    assert not (out / "workspace").exists()


def test_ctrl_c_stops_cleanly_and_keeps_what_was_recorded(tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "kernellab.cli.main", "solve", "--task", TASK, "--agent", "cli",
                             "--agent-option", "command=sh -c 'sleep 120'", "--strategy", "keep-revert",
                             "--no-confine", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        trajectory = out / "trajectory.jsonl"
        while time.monotonic() < deadline and not (trajectory.exists() and '"start"' in trajectory.read_text()):
            time.sleep(0.2)
        time.sleep(1.0)  # the first proposal is under way: the agent sleeps
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    assert stdout.splitlines()[0].startswith("interrupted")
    document = json.loads((out / "result.json").read_text())
    assert document["status"] == "interrupted" and document["confined"] is False
    assert document["confinement"]["reason"] == "confinement turned off (--no-confine)"
    with sqlite3.connect(out / "results.sqlite") as db:
        assert db.execute("SELECT status FROM jobs").fetchone()[0] == "pending"  # resumable
        kinds = [k for (k,) in db.execute("SELECT kind FROM events ORDER BY id")]
    assert kinds[:2] == ["run", "start"] and kinds[-1] == "interrupted"
