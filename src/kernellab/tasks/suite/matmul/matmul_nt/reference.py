"""GEMM with a transposed second operand (nn.Linear layout): C = A @ B^T, B of shape (N, K)."""
import torch
import torch.nn as nn

M = 4096
N = 4096
K = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return A @ B.t()


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K)]


def get_init_inputs():
    return []
