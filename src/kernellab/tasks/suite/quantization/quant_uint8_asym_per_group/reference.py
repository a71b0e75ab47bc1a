"""Asymmetric uint8 quantization per group of GROUP consecutive values (ONNX DynamicQuantizeLinear
semantics, applied per group).

Numeric contract (all arithmetic in float32), for each group g of x (M x N, N a multiple of GROUP):
    lo = min(min(g), 0), hi = max(max(g), 0)              (the range always contains zero)
    scale = (hi - lo) / 255, replaced by 1 when it is 0    (IEEE float32 division)
    zero_point = clamp(round_half_to_even(-lo / scale), 0, 255)
    q = clamp(round_half_to_even(x / scale) + zero_point, 0, 255) as uint8
"""
import torch
import torch.nn as nn

M = 8192
N = 4096
GROUP = 128


class Model(nn.Module):
    def __init__(self, group):
        super().__init__()
        self.group = group

    def forward(self, x):
        rows, cols = x.shape
        xg = x.float().reshape(rows, cols // self.group, self.group)
        lo = xg.amin(dim=-1).clamp(max=0.0)
        hi = xg.amax(dim=-1).clamp(min=0.0)
        # A correctly rounded division on every device: `tensor / 255.0` is a multiplication by the
        # reciprocal on CUDA, one ulp off for most groups, which moves both roundings below (q by 2).
        scale = (hi - lo) / torch.full_like(hi, 255.0)
        scale = torch.where(scale > 0, scale, torch.ones_like(scale))
        zero_point = torch.clamp(torch.round(-lo / scale), 0, 255)
        q = torch.clamp(torch.round(xg / scale[..., None]) + zero_point[..., None], 0, 255)
        return q.reshape(rows, cols).to(torch.uint8), scale, zero_point.to(torch.uint8)


def get_inputs():
    return [torch.randn(M, N) + 0.5]


def get_init_inputs():
    return [GROUP]
