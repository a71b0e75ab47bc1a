"""Asymmetric int4 weight dequantization (GPTQ / AWQ-style group quantization), two values per byte.

w_packed: (N, K/2) uint8, column 2j in the low nibble and 2j + 1 in the high nibble (unsigned 0..15);
scales: (N, K/GROUP) in the activation dtype; zeros: (N, K/GROUP) uint8 in 0..15.
    w[n, k] = (q[n, k] - zeros[n, k // GROUP]) * scales[n, k // GROUP]
"""
import torch
import torch.nn as nn

N = 14336
K = 4096
GROUP = 128


class Model(nn.Module):
    def __init__(self, group):
        super().__init__()
        self.group = group

    def forward(self, w_packed, scales, zeros):
        rows = w_packed.shape[0]
        low = w_packed & 0xF
        high = w_packed >> 4
        q = torch.stack([low, high], dim=-1).reshape(rows, -1)
        s = scales.repeat_interleave(self.group, dim=1)
        z = zeros.repeat_interleave(self.group, dim=1)
        return (q.to(s.dtype) - z.to(s.dtype)) * s


def get_inputs():
    w_packed = torch.randint(0, 256, (N, K // 2), dtype=torch.uint8)
    scales = torch.rand(N, K // GROUP) * 0.01 + 0.001
    zeros = torch.randint(0, 16, (N, K // GROUP), dtype=torch.uint8)
    return [w_packed, scales, zeros]


def get_init_inputs():
    return [GROUP]
