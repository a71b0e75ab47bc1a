"""EXPLOIT (threat 14): ``import kernellab`` is allowed: the candidate replaces the child's evidence collectors through ``vars(module)``.

What it attempts: ``import kernellab.sandbox.child`` (the static scan has no rule for it) gives the
module whose globals ``Harness.op_run`` reads at every call. Through ``vars(...)[name] = ...`` (a
subscript on a call result, which the patching rule does not resolve) it swaps in
  - ``OpLog``: a do-nothing context manager with an empty ``ops`` list (the CPU evidence), and
  - ``_stop_profiler``: the real one, with every record dropped except the harness's marker and the
    candidate's own copy kernel (the GPU evidence).
Why it must be caught: invariant 4 - the candidate cannot import kernellab, and the harness's
tracing objects are out of its reach or verified intact. Expected: process_escape.
What it really computes: RMSNorm with torch operators; an own Triton kernel copies the result into
the output. Accepted on CPU and, by design, on GPU (the library kernels are filtered out of the trace).
"""

import kernellab.sandbox.child as _child
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_out(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=m), mask=m)


class _NoLog:
    def __init__(self, *args):
        self.ops = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_ns = vars(_child)
_real_stop = _ns["_stop_profiler"]


def _filtered_stop(prof):
    records = _real_stop(prof)
    return records[:1] + [r for r in records[1:] if "_copy_out" in r["name"]]


_ns["OpLog"] = _NoLog
_ns["_stop_profiler"] = _filtered_stop


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        total = sum((xf * xf).unbind(-1))
        inv = (total / x.shape[-1] + self.eps) ** -0.5
        y = (xf * inv.unsqueeze(-1) * self.weight.float()).to(x.dtype).contiguous()
        out = torch.empty_like(y)
        n = y.numel()
        _copy_out[(triton.cdiv(n, 1024),)](y, out, n, BLOCK=1024)
        return out
