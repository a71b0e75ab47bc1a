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
