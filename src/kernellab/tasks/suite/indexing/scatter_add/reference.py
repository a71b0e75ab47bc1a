import torch
import torch.nn as nn

rows = 16384
cols = 8192
k = 1024


class Model(nn.Module):
    """x: [rows, cols]; index, src: [rows, k]. Returns x.scatter_add(1, index, src): [rows, cols]."""

    def __init__(self):
        super().__init__()

    def forward(self, x, index, src):
        return x.scatter_add(1, index, src)


def get_inputs():
    return [torch.randn(rows, cols), torch.randint(0, cols, (rows, k)), torch.randn(rows, k)]


def get_init_inputs():
    return []
