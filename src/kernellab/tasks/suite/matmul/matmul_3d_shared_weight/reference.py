"""A batch of token sequences times one shared weight: Y = X @ W, X (B, S, K), W (K, N)."""
import torch
import torch.nn as nn

B = 8
S = 1024
K = 4096
N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, X, W):
        return torch.matmul(X, W)


def get_inputs():
    return [torch.randn(B, S, K), torch.randn(K, N) / K ** 0.5]


def get_init_inputs():
    return []
