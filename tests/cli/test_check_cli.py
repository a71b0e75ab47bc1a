"""`kernellab check` and `kernellab agents list` as users run them: real processes, exit status, output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kernellab.agents.workspace import build_workspace
from kernellab.tasks.load import load_task

ROOT = Path(__file__).parents[2]
TASK = ROOT / "tests" / "adversarial" / "tasks" / "vector_add"
GOOD = (ROOT / "tests" / "adversarial" / "candidates" / "vector_add" / "masked_add.py").read_text()
WRONG = GOOD.replace("(a + b)", "(a - b)")


def kernellab(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kernellab.cli.main", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=600, check=False)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return build_workspace(load_task(TASK), tmp_path / "ws", GOOD).path


def test_check_inside_a_workspace_passes_and_prints_feedback(workspace):
    (workspace / "sub").mkdir()
    done = kernellab("check", cwd=workspace / "sub")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("check vector_add: PASSED (interpret on cpu")
    assert "nothing is timed" in done.stdout and "Held-out configurations are not checked" in done.stdout


def test_check_json_is_one_document_without_holdout_and_a_failure_exits_1(workspace):
    (workspace / "kernel.py").write_text(WRONG)
    done = kernellab("check", "--json", "--workspace", str(workspace))
    assert done.returncode == 1
    document = json.loads(done.stdout)
    assert document["exit_code"] == 1 and document["verdict"]["status"] == "failed"
    assert "holdout" not in document["verdict"] and document["feedback"].startswith("check vector_add: FAILED")


def test_check_outside_a_workspace_is_one_line_and_exit_2(tmp_path):
    done = kernellab("check", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "is not inside a kernellab workspace" in done.stderr
    assert done.stderr.strip().count("\n") == 0 and "Traceback" not in done.stderr


def test_check_script_without_a_service_runs_kernellab_check(workspace):
    """Unconfined, by hand, with no service listening (a stale socket file left behind)."""
    stale = workspace / ".kernellab" / "check.sock"
    stale.write_text("")
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    done = subprocess.run(["./check"], cwd=workspace, capture_output=True, text=True, timeout=600, check=False,
                          env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("check vector_add: PASSED")


def test_check_script_says_what_is_missing_without_kernellab(workspace):
    python = shutil.which("python3", path="/usr/bin:/bin")
    if python is None or subprocess.run([python, "-c", "import kernellab"], capture_output=True,
                                        check=False).returncode == 0:
        pytest.skip("no system python3 without kernellab here")
    done = subprocess.run([python, "-I", "-S", "check"], cwd=workspace, capture_output=True, text=True, timeout=60,
                          check=False, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 2
    assert "no check service is listening" in done.stderr and "kernellab is not installed" in done.stderr


def test_agents_list_shows_every_adapter_and_confinement():
    done = kernellab("agents", "list", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    agents = {a["name"]: a for a in document["agents"]}
    assert agents["replay"]["usable"] is True and agents["replay"]["uses_llm"] is False
    assert set(document["confinement"]) == {"available", "detail"}
    table = kernellab("agents", "list")
    assert table.returncode == 0 and "replay" in table.stdout and "confinement:" in table.stdout
