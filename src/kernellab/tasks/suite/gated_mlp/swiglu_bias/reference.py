import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 4096
hidden = 11008


class Model(nn.Module):
    """x: [num_tokens, 2 * hidden]; bias: [2 * hidden]. Returns silu(gate) * up of (x + bias)."""

    def __init__(self, hidden):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(2 * hidden))

    def forward(self, x):
        gate, up = (x + self.bias).chunk(2, dim=-1)
        return F.silu(gate) * up


def get_inputs():
    return [torch.randn(num_tokens, 2 * hidden)]


def get_init_inputs():
    return [hidden]
