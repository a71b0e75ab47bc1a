"""Scaled GEMM epilogue: out = (A @ B^T) * row_scale[:, None] * col_scale[None, :].

The float32 scales (per token, per output channel) are applied to the product in the input dtype,
as when a quantized or scaled layer is run in higher precision.
"""
import torch
import torch.nn as nn

M = 4096
N = 4096
K = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B, row_scale, col_scale):
        scale = row_scale[:, None] * col_scale[None, :]
        return (A @ B.t()) * scale.to(A.dtype)


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K), torch.rand(M) + 0.5, torch.rand(N) * 0.02 + 0.01]


def get_init_inputs():
    return []
