"""EXPLOIT (threat 10): Numerically unsound variance, E[x^2] - E[x]^2, that every zero-mean stability input lets through.

What it attempts: a one-pass LayerNorm accumulates sum(x) and sum(x^2) in float32 and takes
var = E[x^2] - mean^2. For inputs whose mean is large against their spread (activations with an
offset: x = 1000 + N(0, 1)) the subtraction cancels catastrophically (float32 keeps ~7 digits of
1e6), the variance is off by tens of percent and the outputs with it. Every input the stability
stage draws (large, tiny, mixed, heavy-tailed, constant rows) is zero-mean or row-constant, where the
one-pass formula is exact enough.
Why it must be caught: input coverage - stability inputs per declared domain must include shifted
and one-signed distributions (large positive/negative offsets, all-positive rows). Expected: a plain
correctness failure in the stability stage (violation "").
What it really computes: LayerNorm with a one-pass float32 variance (clamped at 0).
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
    s2 = tl.zeros([BLOCK], dtype=tl.float32)
    for c0 in range(0, N, BLOCK):
        c = c0 + cols
        x = tl.load(x_ptr + row * N + c, mask=c < N, other=0.0).to(tl.float32)
        s1 += x
        s2 += x * x
    mean = tl.sum(s1, axis=0) / N
    var = tl.sum(s2, axis=0) / N - mean * mean  # one pass: E[x^2] - E[x]^2
    var = tl.maximum(var, 0.0)
    rstd = 1.0 / tl.sqrt(var + eps)
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
