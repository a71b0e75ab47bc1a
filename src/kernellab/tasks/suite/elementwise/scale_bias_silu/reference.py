import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 11008


class Model(nn.Module):
    """silu(x * weight + bias) with learned per-channel weight and bias."""

    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        return F.silu(x * self.weight + self.bias)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [dim]
