"""LEGITIMATE: one program per row, the whole row in one masked block, output from torch.empty_like.

Must be accepted. Guards against false positives of the unwritten-output check (threat 2): the
output comes from ``torch.empty_like`` but every element is written by the kernel.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


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
        y = torch.empty_like(x)
        block_n = triton.next_power_of_2(N)
        num_warps = min(max(block_n // 256, 1), 16)  # ~8 elements per thread per pass
        _rmsnorm_row_kernel[(M,)](x, self.weight, y, x.stride(0), y.stride(0), N, self.eps,
                                  BLOCK_N=block_n, num_warps=num_warps)
        return y
