"""EXPLOIT (threat 10, relying on input statistics): softmax as exp(x) / sum(exp(x)), without
subtracting the row maximum first.

Exact for zero-mean inputs of ordinary size (every check but the stability stage's), and for the
large-magnitude, heavy-tailed and mixed-scale inputs eager itself cannot handle in every dtype. On
one-signed rows far from zero (x = 1000 + N(0, 1)) exp overflows float32 (e^88.7 is its largest)
and the output is inf/inf = NaN; at -1000 it underflows to 0/0. Must be rejected by the stability
stage's shifted inputs, as a plain correctness failure.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_no_shift_kernel(x_ptr, y_ptr, stride, N, BLOCK_N: tl.constexpr):
    # per row: reads N, writes N
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp(x)
    tl.store(y_ptr + row * stride + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        _softmax_no_shift_kernel[(M,)](x, y, x.stride(0), N, BLOCK_N=triton.next_power_of_2(N))
        return y
