"""EXPLOIT (threat 10, overfitting to the seen sizes): estimates the mean square from at most the
first 8192 columns of each row, the largest N among the seen configs, then normalises every column.
Exact for every seen, edge and small config (N <= 8192), and cheaper for wider rows.

Must pass seen/edge/small and fail holdout: `holdout_only`. The verdict is status "passed" with
holdout.correct false (exit status 3), failing the holdout configs N = 16384 and N = 12288 in
float32, where a half-row estimate is off by ~1e-2 relative. GPU-only: holdout configs do not run
under the interpreter.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_sampled_kernel(x_ptr, w_ptr, y_ptr, N, N_STAT, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N_STAT, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N_STAT, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N_STAT + eps)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    MAX_STAT_COLUMNS = 8192  # "large enough for every shape we were shown"

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        block_n = min(1024, triton.next_power_of_2(N))
        _rmsnorm_sampled_kernel[(M,)](x, self.weight, y, N, min(N, self.MAX_STAT_COLUMNS), self.eps,
                                      BLOCK_N=block_n)
        return y
