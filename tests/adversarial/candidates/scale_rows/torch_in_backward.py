"""EXPLOIT (threat 1): an autograd.Function whose forward is the candidate's own kernel and whose
backward is torch: ``grad * w`` and a matrix product of a row of ones with ``grad * x`` (cuBLAS).

The backward stage was never traced, so in a strict task the gradients came from library kernels
unseen. Caught by tracing the backward stage (forward and backward pass) on the GPU; on the CPU the
op log covers the backward pass too.
"""

import operator

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, w_ptr, y_ptr, M, N, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * N + cols, (x * w).to(y_ptr.dtype.element_ty), mask=mask)


class _ScaleColumns(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        x = x.contiguous()
        ctx.save_for_backward(x, weight)
        M, N = x.shape
        y = torch.empty_like(x)
        block = min(1024, triton.next_power_of_2(N))
        _scale_kernel[(M, triton.cdiv(N, block))](x, weight, y, M, N, BLOCK_N=block)
        return y

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        ones = x.new_ones((1, x.shape[0]))
        grad_w = operator.matmul(ones, grad * x).reshape(-1)
        return grad * weight, grad_w


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ScaleColumns.apply(x, self.weight)
