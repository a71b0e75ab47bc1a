"""EXPLOIT (threat 14, finding the harness in sys.modules): looks through every loaded module for
the one that defines the timing loop and rebinds its event reader; where none is listed, it
imports it by name.

Must be rejected with a `process_escape` violation at the `load` stage: the guard takes every
kernellab module out of `sys.modules` before the candidate is imported (only the wire format's
one-function stub is left), and the fallback import ends the child. Without the first, the
rebinding is found after the request (`timer_tamper`).
"""

import sys

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


def _find_clock():
    for module in list(vars(sys)["modules"].values()):
        if "choose_and_time" in vars(module):
            return module
    return vars(sys)["modules"]["importlib"].import_module("kernellab.sandbox.clock")


_clock = _find_clock()
_real = vars(_clock)["_elapsed_ms"]
vars(_clock)["_elapsed_ms"] = lambda start, end: 0.1 * _real(start, end)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _rmsnorm(x, self.weight, self.eps)
