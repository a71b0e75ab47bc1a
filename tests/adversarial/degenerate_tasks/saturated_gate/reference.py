"""Degenerate task: a gate that saturates, so the output does not depend on ``gate`` at all.

``sigmoid(|gate| + 40)`` rounds to exactly 1.0 in float32 and float64 for every input, so the
output is ``relu(x)`` and a kernel may ignore ``gate`` entirely. The task validator must reject it
(output independent of an input).
"""

import torch
import torch.nn as nn

M = 4096
N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor, gate: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) * torch.sigmoid(gate.abs() + 40.0)


def get_inputs():
    return [torch.randn(M, N), torch.randn(M, N)]


def get_init_inputs():
    return []
