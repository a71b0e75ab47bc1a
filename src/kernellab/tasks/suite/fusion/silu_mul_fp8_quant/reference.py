"""SwiGLU activation fused with dynamic per-token fp8 quantization (the input of an fp8 down projection,
vLLM silu_and_mul + dynamic_per_token_scaled_fp8_quant).

Numeric contract (float32): gate, up = x[:, :I], x[:, I:];  y = silu(gate) * up;
scale = max(amax |y_row| / 448, 1 / (448 * 512));  q = fp8_e4m3fn(clamp(y / scale, -448, 448)).
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

M = 8192
INTERMEDIATE = 14336
FP8_MAX = 448.0


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        gate, up = x.float().chunk(2, dim=-1)
        y = F.silu(gate) * up
        scale = torch.clamp(y.abs().amax(dim=-1, keepdim=True) / FP8_MAX, min=1.0 / (FP8_MAX * 512.0))
        q = torch.clamp(y / scale, -FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        return q, scale


def get_inputs():
    return [torch.randn(M, 2 * INTERMEDIATE)]


def get_init_inputs():
    return []
