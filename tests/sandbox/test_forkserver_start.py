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
