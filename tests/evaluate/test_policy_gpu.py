"""The GPU trace as evidence, from a real candidate child on a real GPU.

One profiled call of a candidate whose Triton kernel is named like ATen's elementwise kernel, which
also adds with torch and copies an input to the host: the trace shows the candidate's kernel under
its suffixed name, ATen's add under its own, and the copy with its bytes; the judge reads the
candidate's kernel back from the child's Triton cache, and judges the call.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from kernellab.evaluate.own_identity import OwnKernelReader
from kernellab.evaluate.policy import KernelRecord, Origin, host_read_limit, judge_trace, kernel_origin
from kernellab.sandbox.candidate import CandidateProcess, ChildSpec
from kernellab.sandbox.evidence import END_MARKER
from kernellab.sandbox.forkserver import kept_env, server_env, shared_server
from kernellab.sandbox.own_compiles import OWN_SUFFIX
from kernellab.tasks.model import Policy

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

CANDIDATE = '''
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def vectorized_elementwise_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


class ModelNew(nn.Module):
    def forward(self, a, b):
        out = torch.empty_like(a)
        vectorized_elementwise_kernel[(triton.cdiv(a.numel(), 1024),)](a, out, a.numel(), BLOCK=1024)
        host = a.cpu()
        return out + b + host.to(a.device) * 0
'''


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gpu_child")
    path = folder / "candidate.py"
    path.write_text(textwrap.dedent(CANDIDATE))
    env = kept_env()
    env.update(HOME=str(folder), TMPDIR=str(folder), TRITON_CACHE_DIR=str(folder / "triton"),
               TORCH_EXTENSIONS_DIR=str(folder / "torch_extensions"))
    child = CandidateProcess(shared_server(server_env(False)), ChildSpec("cuda", False, env, folder / "child.log"))
    try:
        child.request("import", 120, path=str(path))
        child.request("instantiate", 120, key="k", init_inputs=[], seed=0, state={}, dtype="float32", keep_dtype=[])
        a, b = torch.randn(1 << 20, device="cuda"), torch.randn(1 << 20, device="cuda")
        child.request("run", 120, key="k", calls=[{"inputs": [a, b]}], poison_bytes=[], profile=False)  # compile
        value = child.request("run", 120, key="k", calls=[{"inputs": [a, b]}], poison_bytes=[], profile=True)
    finally:
        child.close()
    return value, str(path), folder


def test_the_candidates_kernel_runs_under_its_suffixed_name(traced):
    value, path, folder = traced
    names = [r["name"] for r in value["trace"][1:]]
    assert "vectorized_elementwise_kernel" + OWN_SUFFIX in names
    assert any("CUDAFunctor_add" in n for n in names)  # torch's add, under ATen's own name
    identity = OwnKernelReader(path, folder / "triton", folder / "torch_extensions").identity()
    assert identity.kernels == {"vectorized_elementwise_kernel" + OWN_SUFFIX}
    origins = {kernel_origin(n, identity) for n in names}
    assert Origin.OWN in origins and Origin.LIBRARY in origins


def test_the_call_ends_with_a_marker_before_the_harness_copies_its_output(traced):
    value, _, _ = traced
    names = [r["name"] for r in value["trace"]]
    end = max(i for i, n in enumerate(names) if END_MARKER in n)
    assert any("CUDAFunctor_add" in n for n in names[:end])
    assert names[end + 1:] and all(n.startswith("Memcpy DtoD") or "copy" in n for n in names[end + 1:])


def test_device_to_host_copies_carry_their_bytes(traced):
    value, _, _ = traced
    copies = [r for r in value["trace"] if r["name"].startswith("Memcpy DtoH")]
    assert [r["bytes"] for r in copies] == [4 << 20]


def test_the_call_is_judged_on_identity_and_transfers(traced):
    value, path, folder = traced
    records = [KernelRecord(r["name"], r["stream"], r["duration_us"], bytes=r["bytes"]) for r in value["trace"]]
    identity = OwnKernelReader(path, folder / "triton", folder / "torch_extensions").identity()
    judgement = judge_trace(records[1:], identity, Policy.STRICT, records[0].stream,
                            host_limit=host_read_limit(4 << 20))
    details = " | ".join(v.detail for v in judgement.violations)
    assert "library kernels ran in a strict task" in details and "copied from the device to the host" in details
    assert judgement.own_kernels and judgement.to_host_bytes == 4 << 20


def test_compiles_and_the_trace_agree_on_a_path(traced):
    _, path, folder = traced
    sources = list(Path(folder, "triton").glob("*/*.source"))
    assert any(f'loc("{path}"' in s.read_text() for s in sources)
