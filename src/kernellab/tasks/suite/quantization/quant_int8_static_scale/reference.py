"""Static (calibrated) int8 quantization with a given per-tensor scale, rounding half away from zero.

Numeric contract (all arithmetic in float32):
    q = clamp(round_half_away_from_zero(x / scale), -128, 127) as int8
with scale a float32 tensor of shape (1,) fixed at calibration; values beyond the calibrated range
saturate.
"""
import torch
import torch.nn as nn

M = 8192
N = 8192


def round_half_away_from_zero(y):
    whole = torch.trunc(y)
    return torch.where((y - whole).abs() >= 0.5, whole + torch.sign(y), whole)


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, scale):
        y = x.float() / scale
        return torch.clamp(round_half_away_from_zero(y), -128, 127).to(torch.int8)


def get_inputs():
    # calibrated for |x| <= 2: about 4.5% of a standard normal saturates
    return [torch.randn(M, N), torch.full((1,), 2.0 / 127.0)]


def get_init_inputs():
    return []
