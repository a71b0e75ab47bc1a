"""W4A16 linear layer (GPTQ / AWQ-style weight-only int4): out = x @ dequant(w)^T.

w_packed: (N, K/2) uint8, column 2j in the low nibble, 2j + 1 in the high nibble (unsigned 0..15);
scales: (N, K/GROUP) in the activation dtype; zeros: (N, K/GROUP) uint8 in 0..15;
    w[n, k] = (q[n, k] - zeros[n, k // GROUP]) * scales[n, k // GROUP]   (rounded to the activation dtype)
"""
import torch
import torch.nn as nn

M = 16
K = 4096
N = 14336
GROUP = 128


class Model(nn.Module):
    def __init__(self, group):
        super().__init__()
        self.group = group

    def forward(self, x, w_packed, scales, zeros):
        rows = w_packed.shape[0]
        q = torch.stack([w_packed & 0xF, w_packed >> 4], dim=-1).reshape(rows, -1)
        s = scales.repeat_interleave(self.group, dim=1)
        z = zeros.repeat_interleave(self.group, dim=1)
        w = (q.to(x.dtype) - z.to(x.dtype)) * s
        return x @ w.t()


def get_inputs():
    x = torch.randn(M, K)
    w_packed = torch.randint(0, 256, (N, K // 2), dtype=torch.uint8)
    scales = (torch.rand(N, K // GROUP) + 0.5) * (0.5 / K ** 0.5)
    zeros = torch.randint(0, 16, (N, K // GROUP), dtype=torch.uint8)
    return [x, w_packed, scales, zeros]


def get_init_inputs():
    return [GROUP]
