import torch
import torch.nn as nn

num_windows = 4096
num_heads = 3
window_size = 7


class Model(nn.Module):
    """scores: [num_windows, heads, N, N], N = window_size**2; bias: [heads, N, N] (learned).

    Returns softmax(scores + bias) over the last dimension.
    """

    def __init__(self, num_heads, window_size):
        super().__init__()
        n = window_size * window_size
        self.bias = nn.Parameter(torch.randn(num_heads, n, n) * 0.5)

    def forward(self, scores):
        return torch.softmax(scores + self.bias, dim=-1)


def get_inputs():
    n = window_size * window_size
    return [torch.randn(num_windows, num_heads, n, n)]


def get_init_inputs():
    return [num_heads, window_size]
