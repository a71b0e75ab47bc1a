"""Weight-only int8 dequantization (W8A16): w = q * scale[n] per output channel.

q: (N, K) int8; scale: (N,) in the activation dtype (bf16 / fp16 / fp32), as stored by weight-only
quantization schemes; the product is rounded once to that dtype.
"""
import torch
import torch.nn as nn

N = 14336
K = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, scale):
        return q.to(scale.dtype) * scale[:, None]


def get_inputs():
    q = torch.randint(-128, 128, (N, K), dtype=torch.int8)
    scale = torch.rand(N) * 0.02 + 0.001
    return [q, scale]


def get_init_inputs():
    return []
