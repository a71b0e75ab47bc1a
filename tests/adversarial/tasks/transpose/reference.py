"""Transpose of a matrix, returned contiguous."""

import torch
import torch.nn as nn

M = 4096  # rows of x
N = 4096  # columns of x


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.t().contiguous()


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return []
