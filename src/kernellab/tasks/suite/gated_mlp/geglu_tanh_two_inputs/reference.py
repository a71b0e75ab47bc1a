import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 4096
hidden = 11008


class Model(nn.Module):
    """gate, up: [num_tokens, hidden]. Returns gelu_tanh(gate) * up."""

    def __init__(self):
        super().__init__()

    def forward(self, gate, up):
        return F.gelu(gate, approximate="tanh") * up


def get_inputs():
    return [torch.randn(num_tokens, hidden), torch.randn(num_tokens, hidden)]


def get_init_inputs():
    return []
