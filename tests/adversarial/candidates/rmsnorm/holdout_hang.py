"""EXPLOIT (threat 10, hard-coded shapes): tuned for the row lengths it was shown; for any other
it waits forever for a configuration that never comes.

Every seen, edge and small config passes; the first holdout config hangs until the request's time
limit kills the process. That is a failed holdout, never an aborted one or a `timeout` verdict:
`holdout.correct` must be false, status `passed`, exit status 3 (invariant 6).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

# The row lengths of the configs an agent is shown (seen, edge and small in TASK.md).
SHOWN_N = (4096, 8192, 2048, 4099, 1, 64)


@triton.jit
def _rmsnorm_row_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, N, eps, BLOCK_N: tl.constexpr):
    # per row: reads N elements of x and N of weight, writes N of y; 4N FLOPs
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        while N not in SHOWN_N:  # "searching for a configuration": forever
            pass
        y = torch.empty_like(x)
        _rmsnorm_row_kernel[(M,)](x, self.weight, y, x.stride(0), y.stride(0), N, self.eps,
                                  BLOCK_N=triton.next_power_of_2(N))
        return y
