"""Dynamic symmetric int8 quantization with one scale for the whole tensor.

Numeric contract (all arithmetic in float32):
    scale = max(amax(|x|), 1e-8) / 127                 (IEEE float32 division)
    q     = clamp(round_half_to_even(x / scale), -127, 127) as int8
"""
import torch
import torch.nn as nn

M = 8192
N = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.float()
        scale = torch.clamp(x.abs().amax(), min=1e-8) / 127.0
        q = torch.clamp(torch.round(x / scale), -127, 127).to(torch.int8)
        return q, scale.reshape(1)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
