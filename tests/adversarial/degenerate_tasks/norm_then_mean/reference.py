"""Degenerate task: LayerNorm without affine, then the mean over the normalised dimension.

The mean of a normalised row is zero by construction, so the output is rounding noise around 0
whatever ``x`` is. A kernel that returns ``zeros(M)`` is "correct"; the task measures nothing.
The task validator must reject it (output nearly constant across inputs).
"""

import torch
import torch.nn as nn

M = 4096
N = 4096


class Model(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.norm = nn.LayerNorm(dim, elementwise_affine=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x).mean(dim=-1)


def get_inputs():
    return [torch.randn(M, N)]


def get_init_inputs():
    return [N]
