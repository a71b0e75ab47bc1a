"""Memory the judge sent to a child: never sent back as is, kept mapped across requests.

torch refuses to send a CUDA tensor received from another process. A candidate whose gradient is
the judge's own ``grad_output`` (an addition passes it through: the reference of
``positional/relative_position_bias`` evaluated as its own candidate did this on the H100) or
whose result aliases an input must still get a verdict: the child sends copies.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import torch

from kernellab.sandbox.candidate import CandidateProcess, ChildSpec
from kernellab.sandbox.child import Received
from kernellab.sandbox.forkserver import ForkServer

PASSES_GRAD_THROUGH = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def __init__(self):
            super().__init__()
            self.bias = nn.Parameter(torch.zeros(4))

        def forward(self, x):
            return x + self.bias  # d/dx is grad_output itself
""")

RETURNS_ITS_INPUT = textwrap.dedent("""
    import torch.nn as nn

    class ModelNew(nn.Module):
        def forward(self, x):
            return x
""")


def test_received_memory_is_known_by_its_storage():
    received = Received()
    x, mine = torch.randn(8), torch.randn(8)
    received.add([{"inputs": [x]}, (None, 3)])
    assert received.holds(x) and received.holds(x[2:]) and received.holds(x.view(2, 4))
    assert not received.holds(mine)


def test_the_registry_forgets_storages_that_died():
    received = Received()
    x = torch.randn(1 << 10)
    received.add(x)
    ptr = x.untyped_storage().data_ptr()
    del x
    received.release()
    assert ptr not in received.refs
    assert not received.kept  # CPU tensors are never held: nothing to keep mapped


def _child(server, tmp_path: Path, source: str, device: str = "cpu") -> CandidateProcess:
    path = tmp_path / "candidate.py"
    path.write_text(source)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path)}
    child = CandidateProcess(server, ChildSpec(device, device == "cpu", env, tmp_path / "candidate.log"))
    child.request("import", 30, path=str(path))
    child.request("instantiate", 30, key="k", init_inputs=[], seed=0, state={}, dtype="float32", keep_dtype=[])
    return child


def _gradient_passed_through(child: CandidateProcess, device: str) -> None:
    x = torch.randn(3, 4, device=device)
    grad = torch.randn(3, 4, device=device)
    for _ in range(2):  # the second request finds the same memory still mapped
        value = child.request("run", 30, key="k", calls=[{"inputs": [x], "wrt": [0], "grad_outputs": [grad]}],
                              poison_bytes=[], profile=False)
        result = value["results"][0]
        assert result["outputs"][0].shape == x.shape
        assert torch.equal(result["grads"]["inputs"][0].to(device), grad)
        assert torch.equal(result["grads"]["params"]["bias"].to(device), grad.sum(0))


def test_a_gradient_that_is_the_judges_grad_output_comes_back(server, tmp_path):
    child = _child(server, tmp_path, PASSES_GRAD_THROUGH)
    try:
        _gradient_passed_through(child, "cpu")
    finally:
        child.close()


HOOKED_GRADIENT = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class _Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            out = g * 2
            real = torch.Tensor.detach.__get__(out)

            def detach():  # would run in the child's send, after every check of the request
                out.fill_(0)
                return real()

            out.detach = detach
            out.contiguous = detach
            return out

    class ModelNew(nn.Module):
        def forward(self, x):
            return _Scale.apply(x)
""")


def test_a_gradient_is_sent_as_a_copy_whatever_its_instance_attributes(server, tmp_path):
    """The send and the copies go through the tensor class, not the instance: a gradient whose
    ``detach`` the backward replaced comes back as the backward left it."""
    child = _child(server, tmp_path, HOOKED_GRADIENT)
    try:
        x, grad = torch.randn(3, 4), torch.randn(3, 4)
        value = child.request("run", 30, key="k", calls=[{"inputs": [x], "wrt": [0], "grad_outputs": [grad]}],
                              poison_bytes=[], profile=False)
        assert torch.equal(value["results"][0]["grads"]["inputs"][0], grad * 2)
    finally:
        child.close()


def test_an_output_that_is_the_input_comes_back(server, tmp_path):
    child = _child(server, tmp_path, RETURNS_ITS_INPUT)
    try:
        x = torch.randn(5)
        value = child.request("run", 30, key="k", calls=[{"inputs": [x]}], poison_bytes=[], profile=False)
        assert torch.equal(value["results"][0]["outputs"][0], x)
    finally:
        child.close()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_gradient_that_is_the_judges_grad_output_comes_back_on_the_gpu(tmp_path):
    work = tmp_path / "server"
    work.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(work)}
    server = ForkServer(env, work / "forkserver.log")
    try:
        child = _child(server, tmp_path, PASSES_GRAD_THROUGH, device="cuda")
        try:
            _gradient_passed_through(child, "cuda")
        finally:
            child.close()
    finally:
        server.close()


def _reference_as_candidate(device: str):
    from kernellab.evaluate.options import ALL_STAGES, EvalOptions
    from kernellab.evaluate.session import EvalSession
    from kernellab.evaluate.verdict import Stage
    from kernellab.tasks.load import load_task
    from kernellab.tasks.model import Policy

    task = load_task("positional/relative_position_bias")
    options = EvalOptions(policy=Policy.OFF, stages=ALL_STAGES - {Stage.TIMING}, time_holdout=False, device=device)
    with EvalSession(task, options) as session:
        verdict = session.evaluate(task.root / "reference.py")
    assert verdict.status.value == "passed", verdict.error
    assert not verdict.violations
    assert any(s.name.value == "backward" and s.passed for s in verdict.stages)


@pytest.mark.slow
def test_the_relative_position_bias_reference_passes_as_its_own_candidate():
    _reference_as_candidate("cpu")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_relative_position_bias_reference_passes_as_its_own_candidate_on_the_gpu():
    _reference_as_candidate("cuda")
