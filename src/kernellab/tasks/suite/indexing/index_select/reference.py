import torch
import torch.nn as nn

num_rows = 8192
dim = 4096
num_indices = 16384


class Model(nn.Module):
    """x: [num_rows, dim]; index: [num_indices] int64. Returns x[index]: [num_indices, dim]."""

    def __init__(self):
        super().__init__()

    def forward(self, x, index):
        return torch.index_select(x, 0, index)


def get_inputs():
    return [torch.randn(num_rows, dim), torch.randint(0, num_rows, (num_indices,))]


def get_init_inputs():
    return []
