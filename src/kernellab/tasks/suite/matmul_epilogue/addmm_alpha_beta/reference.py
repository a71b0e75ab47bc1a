"""Scaled GEMM with a scaled accumulator: out = BETA * C + ALPHA * (A @ B) (torch.addmm)."""
import torch
import torch.nn as nn

M = 4096
N = 4096
K = 4096
ALPHA = 0.5
BETA = 0.25


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, C, A, B):
        return torch.addmm(C, A, B, beta=BETA, alpha=ALPHA)


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, K), torch.randn(K, N)]


def get_init_inputs():
    return []
