"""Baseline: Triton, one program per row, three passes over the row in 1024-wide chunks: (1) add and
store h while accumulating the sum of squares, (2) re-read h for the max of |y|, (3) re-read h to
quantize. Reads 2 + 2 row copies instead of 2, writes h, q and the scale.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_norm_quant_kernel(x_ptr, r_ptr, w_ptr, h_ptr, q_ptr, s_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    sq = tl.zeros((BLOCK,), tl.float32)
    for n0 in range(0, N, BLOCK):
        cols = n0 + tl.arange(0, BLOCK)
        m = cols < N
        h = tl.load(x_ptr + row * N + cols, mask=m, other=0.0) + tl.load(r_ptr + row * N + cols, mask=m, other=0.0)
        tl.store(h_ptr + row * N + cols, h, mask=m)
        hf = h.to(tl.float32)
        sq += hf * hf
    inv_rms = 1.0 / tl.sqrt(tl.sum(sq, 0) / N + eps)
    amax = tl.zeros((BLOCK,), tl.float32)
    for n0 in range(0, N, BLOCK):
        cols = n0 + tl.arange(0, BLOCK)
        m = cols < N
        hf = tl.load(h_ptr + row * N + cols, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
        amax = tl.maximum(amax, tl.abs(hf * inv_rms * w))
    scale = tl.math.div_rn(tl.maximum(tl.max(amax, 0), 1e-8), 127.0)
    tl.store(s_ptr + row, scale)
    for n0 in range(0, N, BLOCK):
        cols = n0 + tl.arange(0, BLOCK)
        m = cols < N
        hf = tl.load(h_ptr + row * N + cols, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
        v = tl.minimum(tl.maximum(tl.math.div_rn(hf * inv_rms * w, scale), -127.0), 127.0)
        v = (v + 12582912.0) - 12582912.0  # round half to even
        tl.store(q_ptr + row * N + cols, v.to(tl.int8), mask=m)


class ModelNew(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x, residual):
        x, residual = x.contiguous(), residual.contiguous()
        M, N = x.shape
        h = torch.empty_like(x)
        q = torch.empty((M, N), device=x.device, dtype=torch.int8)
        scale = torch.empty((M, 1), device=x.device, dtype=torch.float32)
        _add_norm_quant_kernel[(M,)](x, residual, self.weight, h, q, scale, N, self.eps, BLOCK=1024)
        return h, q, scale
