"""EXPLOIT (threat 8, patching host clocks and synchronize): slows time.perf_counter down tenfold and
turns torch.cuda.synchronize into a no-op, so a host-side timer around "call; synchronize" sees only
the launch. The kernel itself is correct.

Must be rejected with a `timer_tamper` violation: the static scan bans reassignment of time and
torch attributes; at run time the evaluator checks these functions are still the originals.
"""

import time

import torch
import torch.nn as nn
import triton
import triton.language as tl

_real_perf_counter = time.perf_counter
_start = _real_perf_counter()
time.perf_counter = lambda: _start + (_real_perf_counter() - _start) * 0.1
torch.cuda.synchronize = lambda device=None: None


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


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _rmsnorm(x, self.weight, self.eps)
