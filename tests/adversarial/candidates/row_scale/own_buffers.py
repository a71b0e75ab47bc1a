"""LEGITIMATE: forward and backward in Triton; the backward reads the grad_output it is handed and
writes dx and dweight into buffers of its own.

Must be accepted: guards against the grad_output comparison (invariant 5) firing on a backward
that only reads grad_output, and against the reference gradients being made from anything but the
judge's own grad_output (threat 4).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, w_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    # reads x (MN) and weight (N), writes y (MN)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < M * N
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs % N, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + offs, (x * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _weight_grad_kernel(g_ptr, x_ptr, dw_ptr, M, N, BLOCK_N: tl.constexpr):
    # per column block: reads g and x down the rows (2MN in all), writes N
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for row in range(0, M):
        g = tl.load(g_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
        acc += g * x
    tl.store(dw_ptr + cols, acc.to(dw_ptr.dtype.element_ty), mask=mask)


class _RowScale(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        _scale_kernel[(triton.cdiv(M * N, 1024),)](x, weight, y, M, N, BLOCK=1024)
        ctx.save_for_backward(x, weight)
        return y

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        M, N = x.shape
        g = g.contiguous()
        dx = torch.empty_like(x)
        _scale_kernel[(triton.cdiv(M * N, 1024),)](g, weight, dx, M, N, BLOCK=1024)
        dw = torch.empty_like(weight)
        _weight_grad_kernel[(triton.cdiv(N, 64),)](g, x, dw, M, N, BLOCK_N=64)
        return dx, dw


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _RowScale.apply(x, self.weight)
