"""Each column of x scaled by a learned weight: y = x * weight (weight broadcast over rows).

The weight starts at ones; the evaluator gives it random values, so a kernel that ignores it fails.
Backward: grad_x = grad_y * weight, grad_weight = sum over rows of grad_y * x.
"""

import torch
import torch.nn as nn

M = 4096  # rows
N = 4096  # columns (one weight each)


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
