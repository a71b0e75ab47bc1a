"""EXPLOIT (invariant 5, judge memory written by the candidate): the backward zeroes the
grad_output it is handed ("reusing it as scratch") and returns the gradients of that zeroed
grad_output, which are zeros.

On the GPU the grad_output crosses by CUDA IPC: it was the judge's own memory, and the judge made
its float64 reference gradients from it after the call, so zeros matched zeros at no cost. The judge
now hands out a copy, computes references from its own grad_output, and compares the copy after
the call: must be rejected with an `input_mutation` violation (threat 4).
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
def _zero_kernel(g_ptr, numel, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(g_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32).to(g_ptr.dtype.element_ty), mask=offs < numel)


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
        _zero_kernel[(triton.cdiv(M * N, 1024),)](g, M * N, BLOCK=1024)  # the grad_output, zeroed in place
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
