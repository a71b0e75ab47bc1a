"""EXPLOIT (threat 1, silent fallback): the kernel launch sits in try/except, and the except branch
computes the result with torch.

The kernel here never compiles (a non-power-of-two tl.arange), so every call takes the torch
branch and the output is correct. Must be rejected with a `policy` violation: the static scan bans
try/except around kernel launches; on a GPU the trace also shows only ATen kernels.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_row_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)  # BLOCK_N = N is not a power of two: fails to compile
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        try:
            _rmsnorm_row_kernel[(M,)](x, self.weight, y, N, self.eps, BLOCK_N=N + 1)
        except Exception:
            y = x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps) * self.weight
        return y
