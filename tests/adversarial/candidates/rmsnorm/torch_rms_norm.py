"""EXPLOIT (threat 1, library op): calls torch.nn.functional.rms_norm and launches no kernel.

The strict policy requires all compute in the candidate's own kernels. Must be rejected with a
`policy` violation: the static scan sees the `F.rms_norm` call and finds no @triton.jit kernel;
on a GPU the profiler trace shows only ATen/library kernels.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.shape[-1],), self.weight, self.eps)
