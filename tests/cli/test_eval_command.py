"""`kernellab eval` as users run it: a real process, its exit status, its stdout and stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]

KERNELBENCH_STYLE = (ROOT / "tests" / "data" / "kernelbench_cross_entropy.py").read_text()


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernellab.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


def test_example_candidate_passes_with_one_json_document():
    proc = run("eval", "--task", "normalization/rmsnorm", "--candidate", "examples/rmsnorm_triton.py", "--json")
    verdict = json.loads(proc.stdout)  # exactly one document: json.loads rejects trailing text
    assert proc.returncode == 0, proc.stderr
    assert verdict["status"] == "passed" and verdict["correct"] is True
    assert verdict["schema"] == 1 and verdict["task"]["id"] == "normalization/rmsnorm"
    names = [s["name"] for s in verdict["stages"]]
    assert names[:3] == ["static", "load", "smoke"] and "backward" in names and "holdout" in names
    assert verdict["holdout"]["correct"] is True


def test_kernelbench_file_with_its_own_reference_as_candidate(tmp_path):
    path = tmp_path / "95_CrossEntropyLoss.py"
    path.write_text(KERNELBENCH_STYLE)
    proc = run("eval", "--task", str(path), "--candidate", str(path), "--policy", "off", "--json")
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 0, (verdict["error"], proc.stderr[-500:])
    assert verdict["policy"] == "off" and verdict["status"] == "passed"


def test_library_reference_is_rejected_under_its_own_policy(tmp_path):
    path = tmp_path / "95_CrossEntropyLoss.py"
    path.write_text(KERNELBENCH_STYLE)
    proc = run("eval", "--task", str(path), "--candidate", str(path), "--json")
    verdict = json.loads(proc.stdout)
    assert proc.returncode == 1
    assert "policy" in {v["kind"] for v in verdict["violations"]}


def test_unusable_input_is_one_line_and_exit_2(tmp_path):
    proc = run("eval", "--task", "no/such_task", "--candidate", "examples/rmsnorm_triton.py")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no task 'no/such_task'" in proc.stderr
    assert "Traceback" not in proc.stderr
    bad = tmp_path / "task"
    bad.mkdir()
    (bad / "reference.py").write_text(KERNELBENCH_STYLE)
    (bad / "task.toml").write_text("schema = 1\ncategory = 'losses'\ncolour = 'red'\n")
    proc = run("eval", "--task", str(bad), "--candidate", "examples/rmsnorm_triton.py", "--json")
    assert proc.returncode == 2 and proc.stdout == ""
    assert "unknown key 'colour'" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("args, message", [
    (("eval", "--task", "normalization/rmsnorm", "--candidate", "examples/rmsnorm_triton.py", "--seed", "x"),
     "Invalid value for '--seed'"),
    (("eval", "--colour", "red"), "No such option: --colour"),
    (("report",), "Missing argument"),
    (("nosuch",), "No such command 'nosuch'"),
])
def test_flags_the_parser_rejects_are_one_line_and_exit_2(args, message):
    proc = run(*args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("error: ") and proc.stderr.strip().count("\n") == 0, proc.stderr
    assert message in proc.stderr and "--help" in proc.stderr


def test_doctor_says_what_this_machine_can_do():
    proc = run("doctor")
    assert proc.returncode == 0, proc.stderr
    for word in ("torch", "triton", "sandbox", "write confinement", "cuda gpu"):
        assert word in proc.stdout
    assert ("gpu mode" in proc.stdout) or ("interpret mode" in proc.stdout)
