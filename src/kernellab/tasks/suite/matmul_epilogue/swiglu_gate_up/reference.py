"""SwiGLU input half of a Llama MLP: y = silu(x @ W_gate^T) * (x @ W_up^T)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M = 4096
HIDDEN = 4096
INTERMEDIATE = 14336


class Model(nn.Module):
    def __init__(self, hidden, intermediate):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)

    def forward(self, x):
        return F.silu(self.gate_proj(x)) * self.up_proj(x)


def get_inputs():
    return [torch.randn(M, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE]
