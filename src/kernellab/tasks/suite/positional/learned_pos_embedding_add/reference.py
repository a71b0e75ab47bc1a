import torch
import torch.nn as nn

batch_size = 128
num_tokens = 257
dim = 1024


class Model(nn.Module):
    """x: [batch, num_tokens, dim]; pos_embed: [1, num_tokens, dim] (learned). Returns x + pos_embed."""

    def __init__(self, num_tokens, dim):
        super().__init__()
        self.pos_embed = nn.Parameter(torch.randn(1, num_tokens, dim) * 0.02)

    def forward(self, x):
        return x + self.pos_embed


def get_inputs():
    return [torch.randn(batch_size, num_tokens, dim)]


def get_init_inputs():
    return [num_tokens, dim]
