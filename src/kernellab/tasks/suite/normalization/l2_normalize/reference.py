import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 4096
hidden = 5120


class Model(nn.Module):
    """x: [num_tokens, hidden]. Returns x / max(||x||_2, eps) over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.normalize(x, p=2.0, dim=-1, eps=1e-12)


def get_inputs():
    return [torch.randn(num_tokens, hidden)]


def get_init_inputs():
    return []
