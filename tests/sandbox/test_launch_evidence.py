"""What a CPU child reports as policy evidence: real fork server, real children, the Triton interpreter.

Per call, the kernels the interpreter launched and the file their code came from; aten ops issued
inside a launch by code that is not Triton's (the interpreter's own argument copies are not); tensors
handed to host code; bytes torch's copies move against bytes the kernels load and store; and the
op log of the backward pass.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
import torch

from kernellab.evaluate.policy import CpuCallEvidence, Policy, judge_cpu_call
from kernellab.sandbox.candidate import CandidateProcess, ChildSpec

KERNEL = '''
import torch
import torch.nn as nn
import torch.utils._mode_utils
import triton
import triton.language as tl

_HOST = {}


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


@triton.jit
def _host_body(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    _HOST["out"].copy_(_HOST["a"] + _HOST["b"])


class _Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w):
        ctx.save_for_backward(w)
        out = torch.empty_like(x)
        _add_kernel[(triton.cdiv(x.numel(), 64),)](x, x, out, x.numel(), BLOCK=64)
        return out

    @staticmethod
    def backward(ctx, grad):
        (w,) = ctx.saved_tensors
        return grad * w, None


class ModelNew(nn.Module):
    def __init__(self, mode):
        super().__init__()
        self.mode = mode
        if mode == "compile":  # under the op log's dispatch mode Dynamo would not compile: here it does
            torch.compile(lambda x: x + 1, backend="eager")(torch.zeros(2))

    def forward(self, a, b):
        out = torch.empty_like(a)
        if self.mode == "kernel":
            _add_kernel[(triton.cdiv(a.numel(), 64),)](a, b, out, a.numel(), BLOCK=64)
        elif self.mode == "host_body":
            _HOST["a"], _HOST["b"], _HOST["out"] = a, b, out
            _host_body[(1,)](a, b, out, a.numel(), BLOCK=64)
        elif self.mode == "numpy":
            out = torch.from_numpy(a.numpy() + b.numpy())
        elif self.mode == "copy":
            out = torch.cat([a, b])[: a.numel()].clone()
            _add_kernel[(1,)](a, b, out, 1, BLOCK=64)
        elif self.mode == "backward":
            out = _Scale.apply(a, b)
        elif self.mode == "compile":
            out = a + b
        elif self.mode == "key_excluded":  # the op log is reached through the Python dispatch key
            with torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(torch._C.DispatchKey.Python)):
                out = torch.add(a, b)
        elif self.mode == "no_dispatch":
            with torch.utils._mode_utils.no_dispatch():
                out = torch.add(a, b)
        elif self.mode == "python_map":  # each element through a Python function: no aten op at all
            out = a.clone().map_(b, lambda x, y: x + y)
        elif self.mode == "built":  # torch.tensor builds below the Python key (detach_, copies): no compute
            out = torch.tensor([1.0, 2.0]).sum() + torch.as_tensor(a.tolist()) * 0 + out.fill_(0)
        return out
'''


def spawn(server, tmp_path: Path) -> CandidateProcess:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "TRITON_INTERPRET": "1"}
    return CandidateProcess(server, ChildSpec("cpu", True, env, tmp_path / "child.log"))


@pytest.fixture
def child(server, tmp_path):
    path = tmp_path / "candidate.py"
    path.write_text(textwrap.dedent(KERNEL))
    proc = spawn(server, tmp_path)
    proc.request("import", 60, path=str(path))
    yield proc, str(path)
    proc.close()


def run(child, mode: str, n: int = 256, backward: bool = False) -> dict:
    proc, _ = child
    proc.request("instantiate", 60, key=mode, init_inputs=[mode], seed=0, state={}, dtype="float32", keep_dtype=[])
    a, b = torch.randn(n), torch.randn(n)
    call = {"inputs": [a, b]}
    if backward:
        call.update(wrt=[0], grad_outputs=[torch.randn(n)])
    return proc.request("run", 60, key=mode, calls=[call, dict(call)], poison_bytes=[], profile=False)


def test_each_call_reports_the_kernels_it_launched_with_their_code_file(child):
    value = run(child, "kernel")
    _, path = child
    assert [[(name, where) for name, where, _ in call] for call in value["launches"]] == [[("_add_kernel", path)]] * 2
    assert all(call[0][2] == 3 * 256 * 4 for call in value["launches"])  # two loads and a store of 256 floats


def test_the_interpreters_own_argument_copies_are_not_the_candidates(child):
    value = run(child, "kernel")
    assert value["ops_in_kernels"] == [] and value["hand_outs"] == []
    assert "aten.add.Tensor" not in value["ops"]


def test_torch_called_from_a_jit_body_is_reported(child):
    value = run(child, "host_body")
    assert "aten.add.Tensor" in value["ops_in_kernels"] and "aten.copy_.default" in value["ops_in_kernels"]
    assert "aten.add.Tensor" not in value["ops"]


def test_tensors_handed_to_numpy_are_reported_by_size(child):
    value = run(child, "numpy")
    assert value["hand_outs"] == [("numpy", 1024), ("numpy", 1024)] * 2
    assert value["launches"] == [[], []]


def test_a_python_function_mapped_over_a_tensor_is_a_hand_out(child):
    value = run(child, "python_map")
    assert value["hand_outs"] == [("map_", 1024)] * 2
    assert not value["hidden_ops"]


def test_bytes_moved_by_torch_copies(child):
    value = run(child, "copy")
    # per call: cat writes 512 floats and reads them (2 x 2048 B), clone of 256 floats (2 x 1024 B)
    assert value["moved_bytes"] == 2 * (2 * 2048 + 2 * 1024)
    assert [call[0][2] for call in value["launches"]] == [3 * 4, 3 * 4]


@pytest.mark.parametrize("mode", ["key_excluded", "no_dispatch"])
def test_ops_kept_from_the_op_log_are_recorded_below_it(child, mode):
    """A dispatch mode never sees an op run with the Python key excluded or dispatch modes disabled;
    the profiler's RecordFunction, below the key, does: each call reports the add as hidden, and the
    judge calls it library compute in a strict task."""
    value = run(child, mode)
    assert "aten.add.Tensor" not in value["ops"]
    assert value["hidden_ops"] == ["aten::add", "aten::add"]
    violations = judge_cpu_call(CpuCallEvidence(ops=value["ops"], hidden_ops=value["hidden_ops"]), Policy.STRICT,
                                child[1])
    assert any("hidden from the op log" in v.detail and "aten::add ×2" in v.detail for v in violations)


def test_what_torch_builds_below_the_op_log_is_not_compute(child):
    """torch itself builds a tensor from Python data with the Python key excluded: only data movement
    is recorded below the op log there, and the judge does not count it."""
    value = run(child, "built")
    assert value["hidden_ops"] is not None
    assert not judge_cpu_call(CpuCallEvidence(ops=[], hidden_ops=value["hidden_ops"]), Policy.STRICT, child[1])


def test_the_backward_pass_is_in_the_op_log(child):
    value = run(child, "backward", backward=True)
    assert value["ops"].count("aten.mul.Tensor") == 2  # grad * w, once per call


def test_graphs_compiled_by_dynamo_are_counted_or_end_the_child(child):
    """Dynamo rewrites library state and writes its caches as it compiles: the guard ends the child
    for either (the candidate changed what the harness relies on, or wrote files outside a kernel
    compile); where it does not, the compiled graph is counted."""
    from kernellab.sandbox.candidate import ChildFailure

    assert run(child, "kernel")["compiled_graphs"] == 0
    try:
        assert run(child, "compile")["compiled_graphs"] >= 1
    except ChildFailure as failure:
        assert failure.violation == "process_escape" and ("rebound" in str(failure) or "writes a file" in str(failure))
