"""LEGITIMATE: a tiled transpose kernel (a pure data-movement task done by the candidate's own kernel).

Must be accepted: guards the strict rule's share of data movement (threat 1) against charging a
kernel whose whole job is moving data; it is the candidate's own kernel, so it carries the work.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _transpose_kernel(x_ptr, y_ptr, M, N, BLOCK: tl.constexpr):
    # per tile: reads BLOCK x BLOCK of x, writes the same tile transposed into y (M x N -> N x M)
    rows = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    tile = tl.load(x_ptr + rows[:, None].to(tl.int64) * N + cols[None, :], mask=mask)
    tl.store(y_ptr + cols[None, :].to(tl.int64) * M + rows[:, None], tile, mask=mask)


class ModelNew(nn.Module):
    BLOCK = 32

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty((N, M), dtype=x.dtype, device=x.device)
        _transpose_kernel[(triton.cdiv(M, self.BLOCK), triton.cdiv(N, self.BLOCK))](x, y, M, N, BLOCK=self.BLOCK)
        return y
