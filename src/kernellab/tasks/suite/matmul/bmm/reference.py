"""Batched GEMM: C[b] = A[b] @ B[b] for each of BATCH independent problems."""
import torch
import torch.nn as nn

BATCH = 16
M = 1024
N = 1024
K = 1024


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.bmm(A, B)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return []
