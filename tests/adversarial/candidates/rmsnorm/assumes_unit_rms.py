"""EXPLOIT (threat 10, hard-coded input statistics): skips the reduction, assuming inputs are
standard normal so that mean(x^2) is 1; the output is x * weight / sqrt(1 + eps).

Close to right for large N with torch.randn inputs; a pure streaming kernel, so much faster. Must be
rejected as an ordinary correctness failure at the `smoke` stage: at N = 64 the mean square of a row
is far from 1, and the stability stage (large, tiny, mixed-scale, constant rows) would catch it at
any N.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_only_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(1.0 + eps)  # "randn has unit variance"
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        _scale_only_kernel[(M,)](x, self.weight, y, N, self.eps, BLOCK_N=triton.next_power_of_2(N))
        return y
