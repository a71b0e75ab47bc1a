"""LEGITIMATE (threat 1): Legitimate: an own tiled transpose kernel; torch only allocates the output.

Must be accepted by a defence against "a torch copy that is the task": the transposition happens
in the candidate's kernel (strided loads of a tile, contiguous stores), and the only torch call is
``torch.empty``.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _transpose(x_ptr, y_ptr, M, N, BM: tl.constexpr, BN: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tile = tl.load(x_ptr + rm[:, None] * N + rn[None, :], mask=mask)
    tl.store(y_ptr + rn[None, :] * M + rm[:, None], tile, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        m, n = x.shape
        out = torch.empty((n, m), dtype=x.dtype, device=x.device)
        if x.numel():
            _transpose[(triton.cdiv(m, 32), triton.cdiv(n, 32))](x, out, m, n, BM=32, BN=32)
        return out
