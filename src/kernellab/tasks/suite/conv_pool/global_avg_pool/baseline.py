"""Baseline: Triton, one program per (n, c) plane summing it in 256-wide chunks. For 7 x 7 planes
each program does a single masked 256-wide load (49 useful lanes); for huge planes a few programs
do all the work. Reads x once.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _plane_mean_kernel(x_ptr, y_ptr, HW, BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    acc = tl.zeros((BLOCK,), tl.float32)
    for i0 in range(0, HW, BLOCK):
        offs = i0 + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + plane * HW + offs, mask=offs < HW, other=0.0).to(tl.float32)
    tl.store(y_ptr + plane, (tl.sum(acc, 0) / HW).to(y_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        y = torch.empty((N, C), device=x.device, dtype=x.dtype)
        _plane_mean_kernel[(N * C,)](x, y, H * W, BLOCK=256)
        return y
