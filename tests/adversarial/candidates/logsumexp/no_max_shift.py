"""EXPLOIT (threat 10, relying on input statistics): log-sum-exp as log(sum(exp(x))), without the
row maximum taken out first.

Exact on zero-mean inputs of ordinary size. On one-signed rows far from zero (x = 1000 + N(0, 1))
exp overflows to inf, and at -1000 it underflows to log(0) = -inf. Must be rejected by the
stability stage's shifted inputs, as a plain correctness failure.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lse_no_shift_kernel(x_ptr, out_ptr, stride, N, BLOCK_N: tl.constexpr):
    # per row: reads N, writes 1
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        acc += tl.exp(x)
    tl.store(out_ptr + row, tl.log(tl.sum(acc, axis=0)).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        out = torch.empty(M, dtype=x.dtype, device=x.device)
        _lse_no_shift_kernel[(M,)](x, out, x.stride(0), N, BLOCK_N=min(1024, triton.next_power_of_2(N)))
        return out
