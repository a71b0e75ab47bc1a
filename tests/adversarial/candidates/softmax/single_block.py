"""LEGITIMATE: one block per row, the row maximum subtracted before exp (masked lanes read -inf).

Must be accepted, including on the stability stage's shifted inputs (rows of 1000 + N(0, 1) and
-1000 + N(0, 1), all-positive rows): subtracting the true maximum keeps exp in [0, 1] for any row.
Guards against stability inputs that no sound kernel could meet (threat 10).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, stride, N, BLOCK_N: tl.constexpr):
    # per row: reads N, writes N; max, subtract, exp, sum, divide
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        _softmax_kernel[(M,)](x, y, x.stride(0), N, BLOCK_N=triton.next_power_of_2(N))
        return y
