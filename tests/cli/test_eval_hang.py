"""A candidate that hangs, as a user meets it: ``--timeout`` sets the hang limit, Ctrl-C ends the
evaluation at once with one line and exit 130 and leaves no candidate process running, and a
terminal shows which stage is running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from cli_process import ROOT, kernellab, kernellab_on_terminal

HANGS = """
import time
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        self.marker = open(__file__)  # held open while it hangs: how the test finds its process
        while True:
            time.sleep(0.01)
"""

CORRECT = """
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        return x.clamp_min(0)
"""


def _hanging(tmp_path):
    candidate = tmp_path / "hangs.py"
    candidate.write_text(HANGS)
    return candidate


def _holding(path) -> int | None:
    """The process holding ``path`` open (a candidate may write no file, not even its pid)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(path) for fd in os.listdir(f"/proc/{pid}/fd")):
                return int(pid)
        except OSError:
            continue
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone for good
        return f.read().split(")")[-1].split()[0] != "Z"


def test_timeout_sets_the_hang_limit(tmp_path):
    candidate = _hanging(tmp_path)
    started = time.monotonic()
    proc = kernellab("eval", "--task", "elementwise/relu", "--policy", "off", "--candidate", str(candidate),
                     "--timeout", "2", "--json", timeout=120)
    verdict = json.loads(proc.stdout)
    assert verdict["status"] == "timeout" and "no answer within 2 s" in verdict["error"], verdict["error"]
    assert time.monotonic() - started < 60  # the default limit is 120 s per request
    assert proc.returncode == 1


def test_timeout_must_be_positive():
    proc = kernellab("eval", "--task", "elementwise/relu", "--candidate", "examples/rmsnorm_triton.py",
                     "--timeout", "0")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--timeout" in proc.stderr


def test_ctrl_c_on_a_hanging_eval_ends_at_once(tmp_path):
    candidate = _hanging(tmp_path)
    # Its own session, as a shell gives a job; the SIGINT goes to the judge's process group, the way a
    # terminal's Ctrl-C does (the candidate's child is in a group of its own and never gets it). Started
    # with SIGINT ignored, as a script's background job or a CI runner starts it: Ctrl-C still counts.
    proc = subprocess.Popen([sys.executable, "-m", "kernellab.cli.main", "eval", "--task", "elementwise/relu",
                             "--policy", "off", "--candidate", str(candidate)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        deadline = time.monotonic() + 120
        child = None
        while child is None and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.1)
            child = _holding(candidate)
        assert child is not None, proc.communicate()
        time.sleep(0.5)
        assert _alive(child)
        sent = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130
    assert took < 5, took  # it took ~32 s: the judge waited for the hung child to answer "exit"
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines[-1] == "interrupted: the candidate's process was stopped; no verdict"
    assert "Traceback" not in err and out == ""
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child)


def test_a_terminal_shows_the_running_stage(tmp_path):
    candidate = tmp_path / "correct.py"
    candidate.write_text(CORRECT)
    code, drawn = kernellab_on_terminal("eval", "--task", "elementwise/relu", "--policy", "off", "--candidate",
                                        str(candidate), "--configs", "seen", "--no-sanitize", columns=160)
    assert code in (0, 1), drawn
    assert "elementwise/relu · smoke (stage 3/" in drawn  # drawn as each stage starts
    assert "elementwise/relu · load (stage 2/" in drawn


def test_piped_stderr_has_no_stage_line(tmp_path):
    candidate = tmp_path / "correct.py"
    candidate.write_text(CORRECT)
    proc = kernellab("eval", "--task", "elementwise/relu", "--policy", "off", "--candidate", str(candidate),
                     "--configs", "seen", "--no-sanitize")
    assert proc.returncode in (0, 1), proc.stderr
    assert "(stage " not in proc.stderr and "\r" not in proc.stderr


@pytest.fixture(autouse=True)
def _interpret(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the CPU path here, as on a machine without a GPU
