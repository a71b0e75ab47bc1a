"""Fine-grained fp8 activation quantization with one scale per 1 x BLOCK tile (DeepSeek-V3 act_quant).

Numeric contract (all arithmetic in float32), x (M x K) with K a multiple of BLOCK:
    s[r, b]   = max(amax(|x[r, b*BLOCK:(b+1)*BLOCK]|), 1e-4) / 448
    q[r, j]   = fp8_e4m3fn(clamp(x[r, j] / s[r, j // BLOCK], -448, 448))   (round to nearest even)
"""
import torch
import torch.nn as nn

M = 8192
K = 7168
BLOCK = 128
FP8_MAX = 448.0


class Model(nn.Module):
    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, x):
        rows, cols = x.shape
        xb = x.float().reshape(rows, cols // self.block, self.block)
        s = torch.clamp(xb.abs().amax(dim=-1), min=1e-4) / FP8_MAX
        q = torch.clamp(xb / s[..., None], -FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        return q.reshape(rows, cols), s


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [BLOCK]
