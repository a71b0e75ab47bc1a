"""Baseline: Triton, one program per token row with two passes over the row (mean and variance with a
second read, then normalize-modulate-store), re-reading shift and scale for every token. Reads x twice.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _adaln_kernel(x_ptr, shift_ptr, scale_ptr, y_ptr, N, D, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    b = row // N
    acc = tl.zeros((BLOCK,), tl.float32)
    for d0 in range(0, D, BLOCK):
        cols = d0 + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * D + cols, mask=cols < D, other=0.0).to(tl.float32)
    mean = tl.sum(acc, 0) / D
    var_acc = tl.zeros((BLOCK,), tl.float32)
    for d0 in range(0, D, BLOCK):
        cols = d0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * D + cols, mask=cols < D, other=0.0).to(tl.float32)
        diff = tl.where(cols < D, x - mean, 0.0)
        var_acc += diff * diff
    rstd = 1.0 / tl.sqrt(tl.sum(var_acc, 0) / D + eps)
    for d0 in range(0, D, BLOCK):
        cols = d0 + tl.arange(0, BLOCK)
        m = cols < D
        x = tl.load(x_ptr + row * D + cols, mask=m, other=0.0).to(tl.float32)
        sh = tl.load(shift_ptr + b * D + cols, mask=m, other=0.0).to(tl.float32)
        sc = tl.load(scale_ptr + b * D + cols, mask=m, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * (1.0 + sc) + sh
        tl.store(y_ptr + row * D + cols, y.to(y_ptr.dtype.element_ty), mask=m)


class ModelNew(nn.Module):
    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x, shift, scale):
        x, shift, scale = x.contiguous(), shift.contiguous(), scale.contiguous()
        B, N, D = x.shape
        y = torch.empty_like(x)
        _adaln_kernel[(B * N,)](x, shift, scale, y, N, D, self.eps, BLOCK=1024)
        return y
