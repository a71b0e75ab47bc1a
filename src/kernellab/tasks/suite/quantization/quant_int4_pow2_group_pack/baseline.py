"""Baseline: Triton, one program per (row, group) loading the even and the odd columns of the group as
two strided vectors (stride-2 loads), scale from the float32 exponent bits.

Reads x once, writes M * N / 2 bytes and the scales; many tiny programs for small groups.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _int4_pack_kernel(x_ptr, p_ptr, s_ptr, N, GROUP, HALF_BLOCK: tl.constexpr):
    row = tl.program_id(0)
    g = tl.program_id(1)
    j = tl.arange(0, HALF_BLOCK)
    mask = j < GROUP // 2
    base = x_ptr + row * N + g * GROUP
    xe = tl.load(base + 2 * j, mask=mask, other=0.0).to(tl.float32)
    xo = tl.load(base + 2 * j + 1, mask=mask, other=0.0).to(tl.float32)
    amax = tl.maximum(tl.max(tl.abs(xe), 0), tl.max(tl.abs(xo), 0))
    biased_exp = (amax.to(tl.int32, bitcast=True) >> 23) & 0xFF  # floor(log2 amax) + 127 for normal amax
    scale = ((biased_exp - 2) << 23).to(tl.float32, bitcast=True)  # 2^(floor(log2 amax) - 2)
    scale = tl.where(amax == 0.0, 0.125, scale)
    qe = tl.minimum(tl.maximum(xe / scale, -8.0), 7.0)
    qo = tl.minimum(tl.maximum(xo / scale, -8.0), 7.0)
    qe = ((qe + 12582912.0) - 12582912.0).to(tl.int32)  # round half to even
    qo = ((qo + 12582912.0) - 12582912.0).to(tl.int32)
    packed = (qe & 0xF) | ((qo & 0xF) << 4)
    tl.store(p_ptr + row * (N // 2) + g * (GROUP // 2) + j, packed.to(tl.uint8), mask=mask)
    tl.store(s_ptr + row * (N // GROUP) + g, scale)


class ModelNew(nn.Module):
    def __init__(self, group):
        super().__init__()
        self.group = group

    def forward(self, x):
        x = x.contiguous()
        M, N = x.shape
        groups = N // self.group
        packed = torch.empty((M, N // 2), device=x.device, dtype=torch.uint8)
        scale = torch.empty((M, groups), device=x.device, dtype=torch.float32)
        half_block = max(16, triton.next_power_of_2(self.group // 2))
        _int4_pack_kernel[(M, groups)](x, packed, scale, N, self.group, HALF_BLOCK=half_block)
        return packed, scale
