"""RMSNorm over the last dimension with a learned scale.

The scale is initialised to ones, as ``torch.nn.RMSNorm`` does; the evaluator replaces constant
parameters by random values, so a kernel that ignores ``weight`` fails.
"""

import torch
import torch.nn as nn

M = 4096  # rows
N = 4096  # normalised dimension
eps = 1e-6


class Model(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return x * rms * self.weight


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return [N, eps]
