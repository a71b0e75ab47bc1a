"""Baseline: Triton, one program per row, two passes over the row (max, then quantize), 1024-wide chunks.

Reads each row twice (2 * M * N * elem), writes M * N int8 and M scales. Rounding half to even uses
the float32 add/subtract of 1.5 * 2^23, exact for |v| <= 127.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _quant_row_kernel(x_ptr, q_ptr, s_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    amax = tl.zeros((BLOCK,), tl.float32)
    for n0 in range(0, N, BLOCK):
        cols = n0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        amax = tl.maximum(amax, tl.abs(x))
    scale = tl.math.div_rn(tl.maximum(tl.max(amax, 0), 1e-8), 127.0)
    tl.store(s_ptr + row, scale)
    for n0 in range(0, N, BLOCK):
        cols = n0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        v = tl.minimum(tl.maximum(tl.math.div_rn(x, scale), -127.0), 127.0)
        v = (v + 12582912.0) - 12582912.0  # round half to even
        tl.store(q_ptr + row * N + cols, v.to(tl.int8), mask=cols < N)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        M, N = x.shape
        q = torch.empty((M, N), device=x.device, dtype=torch.int8)
        scale = torch.empty((M, 1), device=x.device, dtype=torch.float32)
        _quant_row_kernel[(M,)](x, q, scale, N, BLOCK=1024)
        return q, scale
