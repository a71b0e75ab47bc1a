"""Dynamic per-token (per-row) symmetric int8 quantization of activations.

Numeric contract (all arithmetic in float32), for each row r of x (M x N):
    scale[r] = max(amax_j |x[r, j]|, 1e-8) / 127          (IEEE float32 division)
    q[r, j]  = clamp(round_half_to_even(x[r, j] / scale[r]), -127, 127) as int8
"""
import torch
import torch.nn as nn

M = 8192
N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.float()
        scale = torch.clamp(x.abs().amax(dim=-1, keepdim=True), min=1e-8) / 127.0
        q = torch.clamp(torch.round(x / scale), -127, 127).to(torch.int8)
        return q, scale


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
