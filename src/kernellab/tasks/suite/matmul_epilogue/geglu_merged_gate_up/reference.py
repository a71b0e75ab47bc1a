"""GeGLU with a merged gate/up weight (Gemma MLP input half):
h = x @ W^T with W = [W_gate; W_up], y = gelu_tanh(h[:, :I]) * h[:, I:]."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M = 4096
HIDDEN = 3072
INTERMEDIATE = 12288


class Model(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate_up_proj = nn.Linear(hidden, 2 * intermediate, bias=False)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return F.gelu(gate, approximate="tanh") * up


def get_inputs():
    return [torch.randn(M, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE]
