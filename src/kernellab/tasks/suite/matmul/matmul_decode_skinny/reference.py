"""Decode-time projection: a handful of token rows times a weight matrix, y = x @ w^T.

x: (M, K) with M small (batched decode), w: (N, K) in nn.Linear layout. Memory-bound on the weight.
"""
import torch
import torch.nn as nn

M = 16
N = 14336
K = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w):
        return x @ w.t()


def get_inputs():
    return [torch.randn(M, K), torch.randn(N, K) / K ** 0.5]


def get_init_inputs():
    return []
