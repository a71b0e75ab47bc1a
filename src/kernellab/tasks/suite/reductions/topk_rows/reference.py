import torch
import torch.nn as nn

rows = 256
cols = 151936
k = 20


class Model(nn.Module):
    """x: [rows, cols]. Returns (values [rows, k] descending, indices [rows, k] int64)."""

    def __init__(self, k):
        super().__init__()
        self.k = k

    def forward(self, x):
        values, indices = torch.topk(x, self.k, dim=-1, largest=True, sorted=True)
        return values, indices


def get_inputs():
    return [torch.randn(rows, cols)]


def get_init_inputs():
    return [k]
