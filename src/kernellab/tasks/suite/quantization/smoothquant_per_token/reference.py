"""SmoothQuant activation quantization: divide out per-channel smoothing factors, then per-token int8.

Numeric contract (all arithmetic in float32), x (M x K), inv_smooth (K) float32:
    y        = x * inv_smooth[None, :]
    scale[r] = max(amax_j |y[r, j]|, 1e-8) / 127
    q        = clamp(round_half_to_even(y / scale[r]), -127, 127) as int8
"""
import torch
import torch.nn as nn

M = 8192
K = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, inv_smooth):
        y = x.float() * inv_smooth
        scale = torch.clamp(y.abs().amax(dim=-1, keepdim=True), min=1e-8) / 127.0
        q = torch.clamp(torch.round(y / scale), -127, 127).to(torch.int8)
        return q, scale


def get_inputs():
    outliers = torch.ones(K)
    outliers[torch.randint(0, K, (max(K // 256, 1),))] = 30.0  # a few outlier channels, as in LLM activations
    x = torch.randn(M, K) * outliers
    inv_smooth = 1.0 / (torch.rand(K) * 4.0 + 0.5) / outliers.sqrt()
    return [x, inv_smooth]


def get_init_inputs():
    return []
