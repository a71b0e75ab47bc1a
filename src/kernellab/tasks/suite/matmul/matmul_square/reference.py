"""Dense GEMM: C = A @ B, A of shape (M, K), B of shape (K, N)."""
import torch
import torch.nn as nn

M = 4096
N = 4096
K = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
