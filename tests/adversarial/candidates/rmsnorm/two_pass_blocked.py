"""LEGITIMATE: a multi-pass kernel that walks each row in column blocks, with @triton.jit helpers.

Pass 1 accumulates the sum of squares block by block (like the running statistics of an online
softmax); pass 2 re-reads the row and writes the scaled output. The math lives in helper
``@triton.jit`` functions called from the kernel. Must be accepted: guards against policy/attribution
checks (threat 1) that only recognise a single top-level jit function, and against hard-coded-shape
checks (threat 10) that misread a fixed BLOCK_N as an assumption on N.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sum_of_squares(row_ptr, N, BLOCK_N: tl.constexpr):
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(row_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    return tl.sum(acc, axis=0)


@triton.jit
def _inverse_rms(sum_sq, N, eps):
    return 1.0 / tl.sqrt(sum_sq / N + eps)


@triton.jit
def _rmsnorm_two_pass_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, N, eps, BLOCK_N: tl.constexpr):
    # per row: reads x twice (2N) and the weight once (N), writes N; 4N FLOPs
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    rstd = _inverse_rms(_sum_of_squares(x_row, N, BLOCK_N), N, eps)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    # 1024 columns per block keeps the accumulator in registers for any N; the loop covers the rest.
    BLOCK_N = 1024

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        block_n = min(self.BLOCK_N, triton.next_power_of_2(N))
        _rmsnorm_two_pass_kernel[(M,)](x, self.weight, y, x.stride(0), y.stride(0), N, self.eps,
                                       BLOCK_N=block_n, num_warps=4)
        return y
