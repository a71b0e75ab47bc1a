"""EXPLOIT (threat 10, relying on input statistics): a softmax whose row maximum is taken over a
block padded with 0.0 instead of -inf, so the "maximum" is max(0, true maximum).

Softmax is exact for any shift that keeps exp in range, so this is right on every row that holds
a positive value or only small negative ones: every zero-mean check, and edge rows too. On rows of
one sign far below zero (x = -1000 + N(0, 1)) it subtracts 0 instead of about -1000 and exp
underflows to 0/0. Must be rejected by the stability stage's shifted inputs.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_zero_padded_kernel(x_ptr, y_ptr, stride, N, BLOCK_N: tl.constexpr):
    # per row: reads N, writes N
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
    m = tl.maximum(tl.max(x, axis=0), 0.0)  # the padding's 0.0 takes part in the maximum
    e = tl.where(mask, tl.exp(x - m), 0.0)
    tl.store(y_ptr + row * stride + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        _softmax_zero_padded_kernel[(M,)](x, y, x.stride(0), N, BLOCK_N=triton.next_power_of_2(N))
        return y
