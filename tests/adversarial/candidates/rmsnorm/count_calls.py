"""EXPLOIT (threat 11, telling checking from timing by counting calls): correct for the first 10
calls on a model instance, then switches to a cheap wrong kernel (x * weight, no reduction),
betting that correctness is checked early and timing comes later with many calls.

GPU-only (the interpreter has no timing phase). Must be rejected with a `phase_detection` violation:
outputs of timed calls are fingerprinted by the judge and must match. If the evaluator's own
correctness stages already make more than 10 calls on one instance, it fails there as an ordinary
correctness failure, which is also a valid rejection (`also_ok`).
"""

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


@triton.jit
def _scale_kernel(x_ptr, w_ptr, y_ptr, N, BLOCK_N: tl.constexpr):
    # the cheap wrong answer: x * weight, no reduction
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    tl.store(y_ptr + row * N + cols, x * w, mask=mask)


class ModelNew(nn.Module):
    CHECK_CALLS = 10

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self._calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._calls += 1
        if self._calls <= self.CHECK_CALLS:
            return _rmsnorm(x, self.weight, self.eps)
        M, N = x.shape
        y = torch.empty_like(x)
        _scale_kernel[(M,)](x, self.weight, y, N, BLOCK_N=triton.next_power_of_2(N))
        return y
