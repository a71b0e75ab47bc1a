"""Many tiny independent GEMMs: C[b] = A[b] @ B[b] with M, N, K of 16 to 64."""
import torch
import torch.nn as nn

BATCH = 65536
M = 16
N = 16
K = 16


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.bmm(A, B)


def get_inputs():
    return [torch.randn(BATCH, M, K), torch.randn(BATCH, K, N)]


def get_init_inputs():
    return []
