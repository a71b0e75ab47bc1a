import torch
import torch.nn as nn

batch_size = 4096
dim = 11008


class Model(nn.Module):
    """log(1 + x) for non-negative x, accurate near zero."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.log1p(x)


def get_inputs():
    return [torch.rand(batch_size, dim) * 4.0]


def get_init_inputs():
    return []
