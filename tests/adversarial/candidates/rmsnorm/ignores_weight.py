"""EXPLOIT (threat 10, hard-coded parameter values): normalises correctly but never reads the weight,
because the reference initialises it to ones.

Must be rejected as an ordinary correctness failure at the `smoke` stage (no violation kind): the
evaluator replaces constant-initialised parameters by random values and copies them into the
candidate, so the missing scale shows on the first compared call.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms_only_kernel(x_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        _rms_only_kernel[(M,)](x, y, N, self.eps, BLOCK_N=triton.next_power_of_2(N))
        return y
