import torch
import torch.nn as nn

num_rows = 8192
dim = 4096
num_indices = 16384


class Model(nn.Module):
    """x: [num_rows, dim]; index: [num_indices] int64; source: [num_indices, dim].

    Returns x.index_add(0, index, source): [num_rows, dim].
    """

    def __init__(self):
        super().__init__()

    def forward(self, x, index, source):
        return x.index_add(0, index, source)


def get_inputs():
    x = torch.randn(num_rows, dim)
    index = torch.randint(0, num_rows, (num_indices,))
    source = torch.randn(num_indices, dim)
    return [x, index, source]


def get_init_inputs():
    return []
