"""The fork server starts without blocking its caller; the first request waits until it is ready."""

from __future__ import annotations

import os
import time

import torch

from kernellab.sandbox.candidate import CandidateProcess, ChildSpec
from kernellab.sandbox.forkserver import ForkServer


def test_a_server_started_without_waiting_serves_its_first_child(tmp_path):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "TRITON_INTERPRET": "1"}
    started = time.perf_counter()
    server = ForkServer(env, tmp_path / "forkserver.log", wait=False)
    returned = time.perf_counter() - started
    try:
        assert returned < 1.0 and server.alive()  # torch and triton are still being imported
        path = tmp_path / "candidate.py"
        path.write_text("import torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n"
                        "        return x * 2\n")
        child_env = {"PATH": env["PATH"], "HOME": str(tmp_path)}
        child = CandidateProcess(server, ChildSpec("cpu", True, child_env, tmp_path / "child.log"))
        try:
            child.request("import", 30, path=str(path))
            child.request("instantiate", 30, key="k", init_inputs=[], seed=0, state={}, dtype="float32",
                          keep_dtype=[])
            x = torch.randn(3)
            value = child.request("run", 30, key="k", calls=[{"inputs": [x]}], poison_bytes=[], profile=False)
            assert torch.equal(value["results"][0]["outputs"][0], x * 2)
            assert server.status(child.pid) is None  # still running
        finally:
            child.close()
    finally:
        server.close()


def test_what_torch_writes_into_the_environment_starts_no_second_server_and_reaches_no_child(monkeypatch):
    """Inductor sets TRITON_PTXAS_PATH in os.environ at its first compile (a torch.compile baseline);
    the next candidate must find the same fork server and get the environment the judge started with."""
    from kernellab.sandbox import forkserver

    monkeypatch.delenv("TRITON_PTXAS_PATH", raising=False)
    monkeypatch.setattr(forkserver, "_AT_START", {"TRITON_PTXAS_PATH": None})  # as if started without it
    before = forkserver.server_env(interpret=True)
    server = forkserver.shared_server(before, wait=False)
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/elsewhere/torch/bin/ptxas")
    assert forkserver.server_env(interpret=True) == before
    assert forkserver.shared_server(forkserver.server_env(interpret=True), wait=False) is server
    assert "TRITON_PTXAS_PATH" not in forkserver.kept_env()
    # Other kept variables still follow the judge's environment as it is now.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    assert forkserver.kept_env()["CUDA_VISIBLE_DEVICES"] == "3"
    # A value the judge started with is what the children keep, whatever torch writes over it later.
    monkeypatch.setattr(forkserver, "_AT_START", {"TRITON_PTXAS_PATH": "/usr/local/cuda/bin/ptxas"})
    assert forkserver.kept_env()["TRITON_PTXAS_PATH"] == "/usr/local/cuda/bin/ptxas"


JUDGE = '''
import os, signal, sys, time
from pathlib import Path
from kernellab.sandbox.candidate import CandidateProcess, ChildSpec
from kernellab.sandbox.forkserver import ForkServer
work = Path(sys.argv[1])
env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work), "TRITON_INTERPRET": "1"}
server = ForkServer(env, work / "forkserver.log")
child = CandidateProcess(server, ChildSpec("cpu", True, {"PATH": env["PATH"], "HOME": str(work)}, work / "child.log"))
child.send_signal(signal.SIGSTOP)  # as while its evaluation waits for the GPU
print(server.proc.pid, child.pid, flush=True)
time.sleep(600)
'''


def _gone(pid: int) -> bool:
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def test_a_judge_killed_takes_its_fork_server_and_stopped_children_with_it(tmp_path):
    """A judge killed (a timeout's SIGKILL) while its candidate is stopped: the stopped child would
    never read the end of its channel, and held its GPU memory for good. The fork server sees its
    socket close and kills every descendant before it exits."""
    import subprocess
    import sys

    judge = subprocess.Popen([sys.executable, "-c", JUDGE, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        server_pid, child_pid = map(int, judge.stdout.readline().split())
        assert not _gone(child_pid)
        judge.kill()
        judge.wait(10)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not (_gone(child_pid) and _gone(server_pid)):
            time.sleep(0.1)
        assert _gone(child_pid), "the stopped candidate outlived its judge"
        assert _gone(server_pid), "the fork server outlived its judge"
    finally:
        judge.kill()
