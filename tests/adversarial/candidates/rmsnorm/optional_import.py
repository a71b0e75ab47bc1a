"""LEGITIMATE: a try/except around an optional import (a compatibility shim), not around a launch.

Must be accepted: the static rule "no try/except around kernel launches" (threat 1: a silent
fallback to torch when the kernel fails) must tell an import guard from a launch guard.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

try:
    from triton import cdiv
except ImportError:  # very old Triton releases: same helper, defined here
    def cdiv(a: int, b: int) -> int:
        return (a + b - 1) // b


@triton.jit
def _rmsnorm_rows_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_x, stride_y, eps,
                         ROWS: tl.constexpr, BLOCK_N: tl.constexpr):
    # ROWS rows per program: reads ROWS*N of x and N of weight, writes ROWS*N of y
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    rows64 = rows.to(tl.int64)
    x = tl.load(x_ptr + rows64[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=1) / N + eps)
    y = x * rstd[:, None] * w[None, :]
    tl.store(y_ptr + rows64[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    ROWS = 4  # several short rows per program; masked, so M need not be a multiple

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        _rmsnorm_rows_kernel[(cdiv(M, self.ROWS),)](x, self.weight, y, M, N, x.stride(0), y.stride(0),
                                                   self.eps, ROWS=self.ROWS,
                                                   BLOCK_N=triton.next_power_of_2(N))
        return y
