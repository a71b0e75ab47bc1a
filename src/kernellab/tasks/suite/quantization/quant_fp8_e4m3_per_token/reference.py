"""Dynamic per-token fp8 (e4m3fn) quantization of activations (vLLM dynamic per-token scaled fp8).

Numeric contract (all arithmetic in float32), for each row r of x (M x N):
    scale[r] = max(amax_j |x[r, j]| / 448, 1 / (448 * 512))
    q[r, j]  = fp8_e4m3fn(clamp(x[r, j] / scale[r], -448, 448))   (round to nearest even)
"""
import torch
import torch.nn as nn

M = 8192
N = 4096
FP8_MAX = 448.0


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.float()
        scale = torch.clamp(x.abs().amax(dim=-1, keepdim=True) / FP8_MAX, min=1.0 / (FP8_MAX * 512.0))
        q = torch.clamp(x / scale, -FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        return q, scale


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
