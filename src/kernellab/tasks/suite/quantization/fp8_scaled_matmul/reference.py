"""FP8 GEMM with per-tensor scales (torch._scaled_mm semantics) and a bias:
out = (a @ b^T) * scale_a * scale_b + bias, a (M x K) and b (N x K) float8_e4m3fn."""
import torch
import torch.nn as nn

M = 4096
K = 4096
N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b, scale_a, scale_b, bias):
        acc = a.to(torch.float64) @ b.to(torch.float64).t()  # exact products of fp8 values
        out = acc * (scale_a.to(torch.float64) * scale_b.to(torch.float64)) + bias.to(torch.float64)
        return out.to(bias.dtype)


def get_inputs():
    a = torch.clamp(torch.randn(M, K) * 32.0, -448.0, 448.0).to(torch.float8_e4m3fn)
    b = torch.clamp(torch.randn(N, K) * 32.0, -448.0, 448.0).to(torch.float8_e4m3fn)
    scale_a = torch.rand(1) * 0.01 + 0.005
    scale_b = torch.rand(1) * 0.01 + 0.005
    bias = torch.randn(N)
    return [a, b, scale_a, scale_b, bias]


def get_init_inputs():
    return []
