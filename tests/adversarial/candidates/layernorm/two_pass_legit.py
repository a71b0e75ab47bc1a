"""LEGITIMATE (threat 10): Legitimate: a two-pass LayerNorm (mean first, then the centred sum of squares), float32 accumulation.

Must be accepted, including on shifted or one-signed stability inputs: it is the sound algorithm
the one-pass case is measured against. A stability stage that adds offsets must size its tolerance so
that this kernel, whose error at mean 1e3-1e4 is a few float32 ulps of the mean amplified by
1/std, still passes.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_fwd(x_ptr, w_ptr, b_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    s1 = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        c = c0 + cols
        s1 += tl.load(x_ptr + row * N + c, mask=c < N, other=0.0).to(tl.float32)
    mean = tl.sum(s1, axis=0) / N
    s2 = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        c = c0 + cols
        m = c < N
        d = tl.where(m, tl.load(x_ptr + row * N + c, mask=m, other=0.0).to(tl.float32) - mean, 0.0)
        s2 += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(s2, axis=0) / N + eps)
    for c0 in range(0, N, BLOCK):
        c = c0 + cols
        m = c < N
        x = tl.load(x_ptr + row * N + c, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=m, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + c, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * N + c, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=m)


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        if x2.numel():
            _layernorm_fwd[(x2.shape[0],)](x2, self.weight, self.bias, y, x2.shape[1], self.eps, BLOCK=1024)
        return y.view(x.shape)
