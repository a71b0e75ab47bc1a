"""EXPLOIT (threat 4): Writing into judge memory: the backward zeroes the ``grad_output`` it was handed, so the judge's
reference gradients, computed from that tensor *after* the call, become zeros too.

What it attempts: on a GPU the judge sends ``case.grad_outputs`` by CUDA IPC - its own memory - and
builds the float64 reference gradients lazily (``reference.ensure_gradients``), after the
candidate's call returned. The backward kernel stores zeros into ``dy`` and returns zero
gradients; the judge then differentiates with a zero ``grad_output`` and gets zeros as well
(``normalised_error(0, 0) == 0``).
Why it must be caught: invariant 5 - judge memory a child receives is never the judge's own
(copies, or references computed before hand-off and compared after the call). Expected:
input_mutation (grad_output modified) or a plain gradient mismatch.
What it really computes: an honest forward ``y = x * weight``; no backward at all. On the CPU
``grad_output`` arrives by value, the reference is computed from the judge's copy, and the
gradient check fails, so only a GPU shows the hole.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_fwd(x_ptr, w_ptr, y_ptr, n_rows, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    for c0 in range(0, n_cols, BLOCK):
        c = c0 + cols
        m = c < n_cols
        x = tl.load(x_ptr + row * n_cols + c, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * n_cols + c, (x * w).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def _zero(ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(ptr + offs, tl.zeros([BLOCK], dtype=tl.float32).to(ptr.dtype.element_ty), mask=offs < n)


def _zero_fill(t):
    n = t.numel()
    if n:
        _zero[(triton.cdiv(n, 1024),)](t, n, BLOCK=1024)
    return t


class _Scale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        x2 = x.contiguous()
        y = torch.empty_like(x2)
        rows = x2.numel() // max(x2.shape[-1], 1)
        if x2.numel():
            _scale_fwd[(rows,)](x2, weight, y, rows, x2.shape[-1], BLOCK=256)
        ctx.shapes = (x.shape, weight.shape)
        return y

    @staticmethod
    def backward(ctx, dy):
        _zero_fill(dy)  # the judge's grad_output, on a GPU
        x_shape, w_shape = ctx.shapes
        dx = _zero_fill(torch.empty(x_shape, dtype=dy.dtype, device=dy.device))
        dw = _zero_fill(torch.empty(w_shape, dtype=dy.dtype, device=dy.device))
        return dx, dw


class ModelNew(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return _Scale.apply(x, self.weight)
