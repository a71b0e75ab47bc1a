"""Per-head attention scores without the softmax: S = Q @ K^T for every (batch, head)."""
import torch
import torch.nn as nn

B = 4
H = 32
L = 1024
D = 128


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k):
        return torch.matmul(q, k.transpose(-1, -2))


def get_inputs():
    return [torch.randn(B, H, L, D), torch.randn(B, H, L, D)]


def get_init_inputs():
    return []
