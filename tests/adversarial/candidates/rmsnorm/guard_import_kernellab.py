"""EXPLOIT (threat 14, importing the harness): imports the harness's clock module and rebinds the
function it reads CUDA event times with, so every measured interval is reported ten times
shorter. The kernel itself is correct.

Must be rejected with a `process_escape` violation at the `load` stage: the candidate cannot
import kernellab (the guard's audit hook sees the import and ends the child). Were the import
allowed, the rebinding would be found by the check after the request (`timer_tamper`).
"""

import kernellab.sandbox.clock as harness_clock

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_row_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    # per row: reads N of x and N of weight, writes N of y (rows contiguous)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    _rmsnorm_row_kernel[(M,)](x, weight, y, N, eps, BLOCK_N=triton.next_power_of_2(N))
    return y


_real = vars(harness_clock)["_elapsed_ms"]
vars(harness_clock)["_elapsed_ms"] = lambda start, end: 0.1 * _real(start, end)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _rmsnorm(x, self.weight, self.eps)
