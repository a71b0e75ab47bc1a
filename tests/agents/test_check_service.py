"""The check service: real sockets, real evaluations (Triton interpreter on the CPU), real logs."""

from __future__ import annotations

import hashlib
import itertools
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kernellab.agents.check_service import SOCKET_ENV, CheckService
from kernellab.agents.feedback import (
    KernelTime,
    ProfileSummary,
    _ncu_text,
    format_feedback,
    public_verdict,
)
from kernellab.agents.workspace import WorkspaceError, build_workspace
from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.verdict import (
    ConfigCheck,
    HoldoutResult,
    Mode,
    Stage,
    StageResult,
    Status,
    Timing,
    Verdict,
)
from kernellab.tasks.load import load_task

ROOT = Path(__file__).parents[2]
TASK = ROOT / "tests" / "adversarial" / "tasks" / "vector_add"
CANDIDATES = ROOT / "tests" / "adversarial" / "candidates" / "vector_add"
GOOD = (CANDIDATES / "masked_add.py").read_text()
WRONG = GOOD.replace("(a + b)", "(a - b)")
LIBRARY = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, a, b):
        return a + b
'''
HANGS = GOOD.replace("a_flat = a.contiguous().view(-1)", "while True:\n            pass")


def ask(path: Path, line: bytes, timeout: float = 120) -> dict:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(str(path))
        sock.sendall(line)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    return json.loads(data)


def log_records(service: CheckService) -> list[dict]:
    return [json.loads(line) for line in service.log_path.read_text().splitlines()]


@pytest.fixture(scope="module")
def service(tmp_path_factory):
    base = tmp_path_factory.mktemp("service")
    task = load_task(TASK)
    ws = build_workspace(task, base / "ws", GOOD)
    with CheckService(task, ws, base / "logs", timeout_s=120) as svc:
        yield svc


def test_a_check_over_the_socket_is_judged_answered_and_logged_outside_the_workspace(service):
    service.workspace.kernel_path.write_text(GOOD)
    answer = ask(service.socket_path, b'{"profile": false}\n')
    assert answer["exit_code"] == 0, answer["feedback"]
    assert answer["feedback"].startswith("check vector_add: PASSED")
    assert "nothing is timed" in answer["feedback"]  # the interpreter: timings are null and it says why
    verdict = answer["verdict"]
    assert "holdout" not in verdict and verdict["candidate"]["path"] == "kernel.py"
    assert "holdout" not in {s["name"] for s in verdict["stages"]}
    assert service.workspace.path not in service.log_path.parents
    record = log_records(service)[-1]
    sha = hashlib.sha256(GOOD.encode()).hexdigest()
    assert record["kernel_sha256"] == sha and record["status"] == "passed" and record["profile"] is False
    assert record["task_id"] == "vector_add" and not record["timed_out"]
    assert Path(record["kernel"]).read_text() == GOOD


def test_failures_and_violations_come_back_as_compact_feedback(service):
    service.workspace.kernel_path.write_text(WRONG)
    answer = ask(service.socket_path, b"{}\n")
    assert answer["exit_code"] == 1
    lines = answer["feedback"].splitlines()
    assert lines[0].startswith("check vector_add: FAILED at ")
    assert "failing checks:" in lines and any("max abs err" in ln for ln in lines)
    service.workspace.kernel_path.write_text(LIBRARY)
    answer = ask(service.socket_path, b"{}\n")
    assert answer["exit_code"] == 1 and "violations:" in answer["feedback"]
    assert "policy:" in answer["feedback"]
    assert [r["status"] for r in log_records(service)[-2:]] == ["failed", "failed"]


def test_profile_says_which_kernels_ran_under_the_interpreter(service):
    service.workspace.kernel_path.write_text(GOOD)
    answer = ask(service.socket_path, b'{"profile": true}\n')
    assert answer["exit_code"] == 0
    assert "the interpreter ran your Triton kernels _add_kernel" in answer["feedback"]
    assert "torch ops outside your kernels" in answer["feedback"]
    assert log_records(service)[-1]["profile"] is True


def test_the_workspace_check_script_needs_only_the_standard_library(service):
    """-I -S: no site-packages, no PYTHONPATH: kernellab and torch cannot be imported by ./check."""
    service.workspace.kernel_path.write_text(GOOD)
    for extra in ([], ["--json"]):
        done = subprocess.run([sys.executable, "-I", "-S", "check", *extra], cwd=service.workspace.path,
                              capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        if extra:
            assert json.loads(done.stdout)["verdict"]["status"] == "passed"
        else:
            assert done.stdout.startswith("check vector_add: PASSED")
    done = subprocess.run([sys.executable, "-I", "-S", "check", "--fast"], cwd=service.workspace.path,
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "usage: ./check" in done.stderr


def test_checks_of_one_workspace_run_one_at_a_time(service):
    service.workspace.kernel_path.write_text(GOOD)
    before = len(log_records(service))
    answers: list[dict] = []
    threads = [threading.Thread(target=lambda: answers.append(ask(service.socket_path, b"{}\n"))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [a["exit_code"] for a in answers] == [0, 0, 0]
    records = log_records(service)[before:]
    assert len(records) == 3

    spans = sorted((r["started"], r["time"]) for r in records)  # ISO timestamps of one clock sort as times
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, f"two checks overlapped: {spans}"


@pytest.mark.parametrize("line, says", [
    (b"not json\n", "not one JSON line"),
    (b"[1, 2]\n", "must be a JSON object"),
    (b'{"profile": "yes"}\n', "profile must be true or false"),
    (b'{"configs": "holdout"}\n', "unknown request field 'configs'"),
])
def test_bad_requests_get_one_line_and_exit_2(service, line, says):
    answer = ask(service.socket_path, line)
    assert answer["exit_code"] == 2 and says in answer["feedback"]
    assert answer["feedback"].count("\n") == 1


def test_a_kernel_that_hangs_is_stopped_by_the_timeout(tmp_path):
    task = load_task(TASK)
    ws = build_workspace(task, tmp_path / "ws", HANGS)
    with CheckService(task, ws, tmp_path / "logs", timeout_s=3) as svc:
        started = time.monotonic()
        answer = ask(svc.socket_path, b"{}\n", timeout=60)
        assert time.monotonic() - started < 30
        assert answer["exit_code"] == 1 and "TIMEOUT" in answer["feedback"]
        deadline = time.monotonic() + 60
        while not svc.log_path.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert log_records(svc)[-1]["status"] in ("timeout", "failed")


def test_a_deep_workspace_gets_its_socket_where_check_looks(tmp_path):
    deep = tmp_path.joinpath(*["a-rather-long-folder-name"] * 5)
    task = load_task(TASK)
    ws = build_workspace(task, deep / "ws", GOOD)
    assert len(str(ws.socket_path)) > 108  # longer than sockaddr_un holds
    with CheckService(task, ws, tmp_path / "logs", timeout_s=120) as svc:
        assert svc.socket_path == ws.socket_path and svc.bind_paths == [] and svc.env == {SOCKET_ENV: str(ws.socket_path)}
        done = subprocess.run([sys.executable, "-I", "-S", "check"], cwd=ws.path, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
    assert not ws.socket_path.exists() and not (ws.state_dir / "check.json").exists()


def test_service_arguments_are_checked(tmp_path):
    task = load_task(TASK)
    ws = build_workspace(task, tmp_path / "ws", GOOD)
    with pytest.raises(WorkspaceError, match="must lie outside the workspace"):
        CheckService(task, ws, ws.path / "logs")
    with pytest.raises(WorkspaceError, match="is for task vector_add, not normalization/rmsnorm"):
        CheckService(load_task("normalization/rmsnorm"), ws, tmp_path / "logs")
    with pytest.raises(WorkspaceError, match="timeout must be positive"):
        CheckService(task, ws, tmp_path / "logs", timeout_s=0)
    service = CheckService(task, ws.path, tmp_path / "logs", options=EvalOptions(trials=1))
    with pytest.raises(WorkspaceError, match="not started"):
        service.check_now()


# --- feedback on a GPU verdict (the evaluator's own records, as a GPU run fills them) ------------------

def gpu_verdict() -> Verdict:
    timing = Timing(config="N=16777216", dtype="float32", phase="forward", method="events", samples=200,
                    candidate_us=101.5, ci95_us=(100.9, 102.0), eager_us=150.0, compile_us=120.0, baseline_us=None,
                    speedup_vs_eager=1.478, speedup_vs_compile=1.182, pct_of_roofline=81.3)
    return Verdict(task={"id": "vector_add", "sha256": "0"}, candidate={"path": "/snapshots/kernel.py", "sha256": "1"},
                   device="NVIDIA H100 80GB HBM3", mode=Mode.GPU, versions={}, policy="strict", seed=0,
                   status=Status.PASSED, compiled=True, correct=True,
                   stages=[StageResult(Stage.STATIC, True), StageResult(Stage.TIMING, True),
                           StageResult(Stage.HOLDOUT, False, configs=[ConfigCheck("N=1000003", "float32", 1.0, 1.0,
                                                                                  1e-6, passed=False)])],
                   timings=[timing], compile_seconds=1.25, elapsed_s=4.0,
                   speedup={"vs_eager": 1.478, "vs_compile": 1.182, "vs_baseline": None},
                   holdout=HoldoutResult(correct=False, failed_configs=["N=1000003 float32"]))


def test_gpu_feedback_has_timings_and_never_a_holdout_result():
    verdict = gpu_verdict()
    text = format_feedback(verdict, task_id="vector_add")
    assert text.startswith("check vector_add: PASSED (gpu on NVIDIA H100 80GB HBM3; 4.0 s, compile 1.2 s)")
    row = next(line for line in text.splitlines() if line.strip().startswith("N=16777216"))
    assert row.split() == ["N=16777216", "float32", "forward", "101.5", "150.0", "120.0", "-", "1.48", "1.18", "-",
                           "81.3"]
    assert "x1.48 vs eager, x1.18 vs torch.compile, x- vs baseline" in text
    assert "1000003" not in text and "holdout" not in text.lower().replace("held-out", "")
    document = public_verdict(verdict)
    assert "holdout" not in document and "1000003" not in json.dumps(document)
    assert document["candidate"]["path"] == "kernel.py"


def test_gpu_profile_lines_rank_kernels_by_time():
    profile = ProfileSummary(config="N=16777216", dtype="float32", calls=3,
                             kernels=[KernelTime("_add_kernel", 3, 300.0), KernelTime("fill_kernel", 3, 100.0)])
    lines = profile.lines()
    assert lines[0] == "profile (N=16777216 float32, 3 calls):"
    assert lines[1].split() == ["75.0%", "100.0", "us/call", "3", "launches", "_add_kernel"]
    failed = ProfileSummary(config="c", dtype="float32", calls=3, error="the candidate raised")
    assert failed.lines() == ["profile (c float32, 3 calls): not available: the candidate raised"]


NCU_CSV = '''==PROF== Connected to process 4242 (/usr/bin/python3.11)
==PROF== Profiling "_add_kernel" - 0: 0%....50%....100% - 9 passes
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","4242","python3.11","127.0.0.1","_add_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","dram__throughput.avg.pct_of_peak_sustained_elapsed","%","88.12"
"0","4242","python3.11","127.0.0.1","_add_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","61.47"
"0","4242","python3.11","127.0.0.1","_add_kernel","1","7","(256, 1, 1)","(16384, 1, 1)","0","9.0","Command line profiler metrics","launch__registers_per_thread","register/thread","16"
'''


def test_ncu_csv_becomes_a_short_table():
    done = subprocess.CompletedProcess(["ncu"], 0, NCU_CSV, "")
    text = _ncu_text(done, "N=16777216 float32")
    lines = text.splitlines()
    assert lines[0].startswith("ncu (N=16777216 float32, one call")
    assert lines[2].split() == ["_add_kernel", "61.47", "88.12", "-", "-", "16"]
    broken = subprocess.CompletedProcess(["ncu"], 1, "", "==ERROR== ERR_NVGPUCTRPERM: no permission\n")
    assert _ncu_text(broken, "c") == "ncu (c): no metrics (==ERROR== ERR_NVGPUCTRPERM: no permission)"
