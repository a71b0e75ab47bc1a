import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
channels = 512
height = 32
width = 32
num_groups = 32
eps = 1e-5


class Model(nn.Module):
    """x: [batch, channels, height, width]. Returns silu(group_norm(x, num_groups) * weight + bias)."""

    def __init__(self, channels, num_groups, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.num_groups = num_groups
        self.eps = eps

    def forward(self, x):
        return F.silu(F.group_norm(x, self.num_groups, self.weight, self.bias, self.eps))


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, num_groups, eps]
