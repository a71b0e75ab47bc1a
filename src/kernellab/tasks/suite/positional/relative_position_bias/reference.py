import torch
import torch.nn as nn

num_windows = 4096
num_heads = 3
window_size = 7


def relative_position_index(window_size):
    """[N, N] int64: index into the bias table of the offset between patches i and j."""
    coords = torch.stack(torch.meshgrid(torch.arange(window_size), torch.arange(window_size), indexing="ij"))
    coords = coords.flatten(1)  # [2, N]
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window_size - 1)
    return rel[..., 0] * (2 * window_size - 1) + rel[..., 1]


class Model(nn.Module):
    """scores: [num_windows, heads, N, N]. Returns scores + table[index].permute(2, 0, 1)."""

    def __init__(self, num_heads, window_size):
        super().__init__()
        self.table = nn.Parameter(torch.randn((2 * window_size - 1) ** 2, num_heads))  # a trained table's scale
        self.register_buffer("index", relative_position_index(window_size))

    def forward(self, scores):
        n = self.index.shape[0]
        bias = self.table[self.index.reshape(-1)].reshape(n, n, -1).permute(2, 0, 1)
        return scores + bias.unsqueeze(0)


def get_inputs():
    n = window_size * window_size
    return [torch.randn(num_windows, num_heads, n, n)]


def get_init_inputs():
    return [num_heads, window_size]
