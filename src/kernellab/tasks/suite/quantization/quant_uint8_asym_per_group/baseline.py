"""Baseline: Triton, one program per (row, group), one group loaded at a time (no vectorization across
groups, many tiny programs). Reads x once, writes q, scale and zero_point once.

Rounding half to even uses the float32 add/subtract of 1.5 * 2^23 on values clamped to a small range.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _round_half_even(v):
    return (v + 12582912.0) - 12582912.0


@triton.jit
def _quant_group_kernel(x_ptr, q_ptr, s_ptr, z_ptr, N, GROUP, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    g = tl.program_id(1)
    cols = g * GROUP + tl.arange(0, BLOCK)
    mask = tl.arange(0, BLOCK) < GROUP
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    lo = tl.minimum(tl.min(tl.where(mask, x, float("inf")), 0), 0.0)
    hi = tl.maximum(tl.max(tl.where(mask, x, float("-inf")), 0), 0.0)
    scale = tl.math.div_rn(hi - lo, 255.0)
    scale = tl.where(scale > 0, scale, 1.0)
    zp = _round_half_even(tl.minimum(tl.maximum(tl.math.div_rn(-lo, scale), 0.0), 255.0))
    v = tl.math.div_rn(x, scale)
    v = tl.minimum(tl.maximum(v, -1024.0), 1024.0)
    q = tl.minimum(tl.maximum(_round_half_even(v) + zp, 0.0), 255.0)
    tl.store(q_ptr + row * N + cols, q.to(tl.uint8), mask=mask)
    groups = N // GROUP
    tl.store(s_ptr + row * groups + g, scale)
    tl.store(z_ptr + row * groups + g, zp.to(tl.uint8))


class ModelNew(nn.Module):
    def __init__(self, group):
        super().__init__()
        self.group = group

    def forward(self, x):
        x = x.contiguous()
        M, N = x.shape
        group = self.group
        groups = N // group
        q = torch.empty((M, N), device=x.device, dtype=torch.uint8)
        scale = torch.empty((M, groups), device=x.device, dtype=torch.float32)
        zp = torch.empty((M, groups), device=x.device, dtype=torch.uint8)
        _quant_group_kernel[(M, groups)](x, q, scale, zp, N, group, BLOCK=max(16, triton.next_power_of_2(group)))
        return q, scale, zp
