"""GEMM with a long reduction: C = A @ B where K is much larger than M and N."""
import torch
import torch.nn as nn

M = 512
N = 512
K = 131072


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return A @ B


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
