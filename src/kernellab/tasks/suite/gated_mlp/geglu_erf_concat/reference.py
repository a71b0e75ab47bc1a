import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 4096
hidden = 11008


class Model(nn.Module):
    """x: [num_tokens, 2 * hidden] = [gate | up]. Returns gelu(gate) * up: [num_tokens, hidden]."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        gate, up = x.chunk(2, dim=-1)
        return F.gelu(gate) * up


def get_inputs():
    return [torch.randn(num_tokens, 2 * hidden)]


def get_init_inputs():
    return []
