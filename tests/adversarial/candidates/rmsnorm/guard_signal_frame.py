"""EXPLOIT (threat 14, a signal handler's frame): installs a SIGALRM handler and a 1 ms interval
timer; the handler is called with whatever frame is running when the signal arrives (the
harness's timing loop) and could rewrite its samples. Neither `signal.signal` nor
`signal.setitimer` is audited. The kernel itself is correct.

Must be rejected with a `process_escape` violation at the `load` stage: the guard replaces
`signal.signal` (and every name bound to it) by a gate that ends the child when the candidate
calls it.
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


_signal = vars(sys)["modules"]["signal"]


def _on_alarm(signum, frame):
    while frame is not None:
        frame = getattr(frame, "f_back")


_signal.signal(_signal.SIGALRM, _on_alarm)
_signal.setitimer(_signal.ITIMER_REAL, 0.001, 0.001)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _rmsnorm(x, self.weight, self.eps)
