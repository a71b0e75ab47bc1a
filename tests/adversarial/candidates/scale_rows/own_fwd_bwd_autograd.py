"""LEGITIMATE: an autograd.Function whose forward and backward are the candidate's own kernels.

Forward: y = x * w. Backward: grad_x = grad_y * w (elementwise kernel), grad_w = column sums of
grad_y * x (a kernel that walks the rows of one block of columns per program). The weight is cast to
float32 once per call (a small cast, N elements) before the kernels. Must be accepted: guards the
backward trace (threat 1) against charging autograd's plumbing or a small cast to the candidate.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, w_ptr, y_ptr, M, N, BLOCK_N: tl.constexpr):
    # per row: reads N of x and N of w, writes N of y
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * N + cols, (x * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _column_dot_kernel(g_ptr, x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # per block of columns: reads M x BLOCK_N of grad and of x, writes BLOCK_N sums
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    cmask = cols < N
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, M, BLOCK_M):
        rows = (start + tl.arange(0, BLOCK_M)).to(tl.int64)
        mask = (rows[:, None] < M) & cmask[None, :]
        offs = rows[:, None] * N + cols[None, :]
        g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        acc += tl.sum(g * x, axis=0)
    tl.store(out_ptr + cols, acc.to(out_ptr.dtype.element_ty), mask=cmask)


def _scale(x: torch.Tensor, w32: torch.Tensor) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    block = min(1024, triton.next_power_of_2(N))
    _scale_kernel[(M, triton.cdiv(N, block))](x, w32, y, M, N, BLOCK_N=block)
    return y


class _ScaleColumns(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        x = x.contiguous()
        ctx.save_for_backward(x, weight)
        return _scale(x, weight.float())

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        grad = grad.contiguous()
        grad_x = _scale(grad, weight.float())
        M, N = x.shape
        grad_w = torch.empty_like(weight)
        _column_dot_kernel[(triton.cdiv(N, 64),)](grad, x, grad_w, M, N, BLOCK_M=32, BLOCK_N=64)
        return grad_x, grad_w


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ScaleColumns.apply(x, self.weight)
