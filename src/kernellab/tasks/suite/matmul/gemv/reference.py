"""Matrix-vector product y = W @ x, W of shape (N, K), x of shape (K,)."""
import torch
import torch.nn as nn

N = 8192
K = 8192


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, W, x):
        return torch.mv(W, x)


def get_inputs():
    return [torch.randn(N, K) / K ** 0.5, torch.randn(K)]


def get_init_inputs():
    return []
