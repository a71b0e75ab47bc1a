"""LEGITIMATE: the kernel writes a flat ``torch.empty`` buffer, returned as a view of the right shape;
the input is read through a flat view too.

Must be accepted: guards the output-provenance and share rules (threat 1) against views and
allocation around an own kernel, which are not data movement that does the task.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _transpose_flat_kernel(x_ptr, y_ptr, M, N, total, BLOCK: tl.constexpr):
    # per lane: one element of y (N x M, row-major) gathered from x (M x N): reads and writes total
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < total
    j = offs // M  # row of y = column of x
    i = offs % M   # column of y = row of x
    tl.store(y_ptr + offs, tl.load(x_ptr + i * N + j, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        flat_x = x.contiguous().view(-1)
        flat_y = torch.empty(M * N, dtype=x.dtype, device=x.device)
        total = M * N
        _transpose_flat_kernel[(triton.cdiv(total, 1024),)](flat_x, flat_y, M, N, total, BLOCK=1024)
        return flat_y.view(N, M)
