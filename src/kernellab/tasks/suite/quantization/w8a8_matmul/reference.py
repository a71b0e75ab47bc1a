"""W8A8 linear layer: int8 activations (per-token scales) times int8 weights (per-channel scales), plus a bias.

    out[m, n] = (sum_k x_q[m, k] * w_q[n, k]) * x_scale[m] * w_scale[n] + bias[n]
The integer dot products are exact (int32 accumulation, or float64 here); scales are float32; the
result is rounded once to the bias dtype.
"""
import torch
import torch.nn as nn

M = 4096
K = 4096
N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x_q, w_q, x_scale, w_scale, bias):
        acc = x_q.to(torch.float64) @ w_q.to(torch.float64).t()  # exact: |acc| < 2^53
        out = acc * x_scale.to(torch.float64) * w_scale.to(torch.float64)[None, :] + bias.to(torch.float64)
        return out.to(bias.dtype)


def get_inputs():
    x_q = torch.randint(-127, 128, (M, K), dtype=torch.int8)
    w_q = torch.randint(-127, 128, (N, K), dtype=torch.int8)
    x_scale = torch.rand(M, 1) * 0.05 + 0.01
    w_scale = torch.rand(N) * 0.001 + 0.0005
    bias = torch.randn(N)
    return [x_q, w_q, x_scale, w_scale, bias]


def get_init_inputs():
    return []
