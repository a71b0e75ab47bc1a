"""EXPLOIT (threat 14, through the harness's patches of Triton): the harness wraps Triton's compile
step; the wrapper is reachable from Triton (`JITFunction._do_compile`), and its `__globals__`
and closure cells (neither is audited) used to be the harness's own module. The candidate
looks there for the clock or the harness and rebinds the event reader; finding nothing, it
falls back to reading its caller's frame.

Must be rejected with a `process_escape` violation at the `load` stage: the wrappers are built
with globals that hold nothing of the harness, and the fallback (a frame) ends the child. Were
the harness reachable there, the rebinding would be found after the request (`timer_tamper`).
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


def _search():
    wrapper = triton.runtime.jit.JITFunction._do_compile
    spaces = [wrapper.__globals__] + [getattr(c.cell_contents, "__globals__", {}) for c in wrapper.__closure__ or ()]
    for space in spaces:
        clock = space.get("clock")
        if clock is not None and hasattr(clock, "_elapsed_ms"):
            real = clock._elapsed_ms
            clock._elapsed_ms = lambda start, end: 0.1 * real(start, end)
            return True
    return False


if not _search():
    _frame = vars(inspect)["currentframe"]()


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _rmsnorm(x, self.weight, self.eps)
