"""Pre-LN projection: y = LayerNorm(x) @ W^T + b (the input of a pre-LN attention / MLP block, CLIP / GPT-2)."""
import torch
import torch.nn as nn

M = 8192
K = 1024
N = 4096
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, in_features, out_features, eps):
        super().__init__()
        self.norm = nn.LayerNorm(in_features, eps=eps)
        self.fc = nn.Linear(in_features, out_features)

    def forward(self, x):
        return self.fc(self.norm(x))


def get_inputs():
    return [torch.randn(M, K) * 3.0 + 1.0]


def get_init_inputs():
    return [K, N, EPS]
