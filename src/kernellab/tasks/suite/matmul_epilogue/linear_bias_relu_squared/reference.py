"""Affine layer followed by squared ReLU (Primer): y = relu(x @ W^T + b) ** 2."""
import torch
import torch.nn as nn

M = 4096
K = 1024
N = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return torch.relu(self.linear(x)).square()


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N]
