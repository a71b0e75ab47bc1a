import torch
import torch.nn as nn

rows = 8192
cols = 4096


class Model(nn.Module):
    """x: [rows, cols]. Returns logsumexp(x, -1): [rows]."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.logsumexp(x, dim=-1)


def get_inputs():
    # Rows with their own scale (0.5 to 2) and offset (standard normal): the result varies per row.
    return [torch.randn(rows, cols) * (0.5 + 1.5 * torch.rand(rows, 1)) + torch.randn(rows, 1)]


def get_init_inputs():
    return []
