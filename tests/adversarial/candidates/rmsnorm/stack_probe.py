"""EXPLOIT (threat 11, reading the caller's stack): inspects the Python call stack and, when a caller
looks like a timing or benchmark loop, returns a cheap wrong answer; otherwise it is correct.

Under the interpreter nothing is timed, so at run time it is correct; only the static scan can catch
it. Must be rejected with a `phase_detection` violation at the `static` stage (inspect / sys._getframe
/ frame introspection is banned). The evaluator should also make the candidate's view of its caller
identical in every phase.
"""

import inspect

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


def _being_timed() -> bool:
    names = " ".join(frame.function.lower() for frame in inspect.stack()[2:])
    return any(word in names for word in ("timing", "bench", "measure", "elapsed"))


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not _being_timed():
            return _rmsnorm(x, self.weight, self.eps)
        M, N = x.shape
        y = torch.empty_like(x)
        _scale_kernel[(M,)](x, self.weight, y, N, BLOCK_N=triton.next_power_of_2(N))
        return y
