"""Low-rank factorized projection: y = (x @ U) @ V with a small rank R."""
import torch
import torch.nn as nn

M = 8192
K = 4096
R = 128
N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, U, V):
        return (x @ U) @ V


def get_inputs():
    return [torch.randn(M, K), torch.randn(K, R) / K ** 0.5, torch.randn(R, N) / R ** 0.5]


def get_init_inputs():
    return []
