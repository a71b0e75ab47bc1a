import torch
import torch.nn as nn

rows = 8192
cols = 4096


class Model(nn.Module):
    """x: [rows, cols]. Returns x.var(-1, correction=0): [rows]."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.var(x, dim=-1, correction=0)


def get_inputs():
    # Rows with their own scale (0.75 to 5.25) and offset (around 10): the result varies per row.
    scale = 3.0 * (0.25 + 1.5 * torch.rand(rows, 1))
    return [torch.randn(rows, cols) * scale + (10.0 + torch.randn(rows, 1))]


def get_init_inputs():
    return []
