"""A learned per-feature scale, y = x * weight, with its backward (gradients of x and weight)."""

import torch
import torch.nn as nn

M = 4096  # rows
N = 4096  # features


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.weight


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return [N]
