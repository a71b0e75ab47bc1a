"""MoE router logits: many tokens times a small expert matrix, logits = x @ w^T.

x: (T, K) token hidden states, w: (E, K) router weight with E experts (8 to 256).
"""
import torch
import torch.nn as nn

T = 16384
K = 4096
E = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        return x @ w.t()


def get_inputs():
    return [torch.randn(T, K), torch.randn(E, K) / K ** 0.5]


def get_init_inputs():
    return []
