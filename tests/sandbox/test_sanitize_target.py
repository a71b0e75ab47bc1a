"""The process compute-sanitizer wraps ends with the judge that asked for it.

A judge killed mid-check (a campaign's time limit, a ``timeout``) cannot kill the tool's process
group itself; the target, started in a session of its own, would run on for minutes on the GPU beside
the next evaluation. The target here is blocked where no GPU is needed: opening its progress-mark
file, a FIFO nobody reads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from kernellab.sandbox.sanitize_target import JUDGE_GONE

SRC = str(Path(__file__).resolve().parents[2] / "src")


def _blocked_target(tmp_path: Path, judge_pid: int | None) -> subprocess.Popen:
    fifo = tmp_path / "marks.fifo"
    os.mkfifo(fifo)
    job = {"candidate": "unused.py", "source": "", "where": "", "items": [], "seed": 0, "fp32_precision": "ieee",
           "status_path": str(fifo), "log_path": str(tmp_path / "candidate.log"), "judge_pid": judge_pid}
    (tmp_path / "job.json").write_text(json.dumps(job))
    return subprocess.Popen([sys.executable, "-m", "kernellab.sandbox.sanitize_target", str(tmp_path / "job.json")],
                            env={**os.environ, "PYTHONPATH": SRC}, start_new_session=True)


def test_the_target_exits_when_its_judge_is_gone(tmp_path):
    judge = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    target = _blocked_target(tmp_path, judge.pid)
    try:
        time.sleep(1.5)
        assert target.poll() is None  # blocked while the judge lives
        judge.kill()
        judge.wait()
        assert target.wait(timeout=10) == JUDGE_GONE
    finally:
        for proc in (judge, target):
            proc.kill()
            proc.wait()


def test_a_judge_gone_before_the_target_started_ends_it_at_once(tmp_path):
    judge = subprocess.Popen([sys.executable, "-c", "pass"])
    judge.wait()
    target = _blocked_target(tmp_path, judge.pid)
    try:
        assert target.wait(timeout=10) == JUDGE_GONE
    finally:
        target.kill()
        target.wait()


def test_without_a_judge_pid_the_target_waits_as_before(tmp_path):
    target = _blocked_target(tmp_path, None)
    try:
        time.sleep(1.5)
        assert target.poll() is None
    finally:
        target.kill()
        target.wait()
