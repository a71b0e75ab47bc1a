"""EXPLOIT (threat 10, relying on input statistics): LayerNorm whose variance is computed in one
pass as E[x^2] - E[x]^2.

One read of the row instead of two, and exact enough on zero-mean rows: every check but the
stability stage's shifted rows passes. On rows of 1000 + N(0, 1) in float32, E[x^2] = 1e6 is held
to about 0.06 while the variance is 1: the difference cancels catastrophically (it can even come
out negative). Must be rejected by the stability stage, as a plain correctness failure.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_one_pass_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride, N, eps, BLOCK_N: tl.constexpr):
    # per row: reads x twice (2N), weight and bias once (2N), writes N
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    s1 = tl.zeros((BLOCK_N,), dtype=tl.float32)
    s2 = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        s1 += x
        s2 += x * x
    mean = tl.sum(s1, axis=0) / N
    var = tl.sum(s2, axis=0) / N - mean * mean
    rstd = 1.0 / tl.sqrt(var + eps)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride + cols, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


class _Norm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.norm = _Norm(dim, eps)  # same parameter names as the reference's nn.LayerNorm

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        _layernorm_one_pass_kernel[(M,)](x, self.norm.weight, self.norm.bias, y, x.stride(0), N, self.norm.eps,
                                         BLOCK_N=min(1024, triton.next_power_of_2(N)))
        return y
