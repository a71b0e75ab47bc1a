"""Output projection with a residual connection: y = x @ W^T + residual (no bias)."""
import torch
import torch.nn as nn

M = 4096
K = 4096
N = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features, bias=False)

    def forward(self, x, residual):
        return self.proj(x) + residual


def get_inputs():
    return [torch.randn(M, K), torch.randn(M, N)]


def get_init_inputs():
    return [K, N]
