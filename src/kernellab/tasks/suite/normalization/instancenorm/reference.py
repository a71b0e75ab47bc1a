import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16
channels = 512
height = 32
width = 32
eps = 1e-5


class Model(nn.Module):
    """x: [batch, channels, height, width]. Normalises each plane over height and width, then w, b."""

    def __init__(self, channels, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(channels))
        self.bias = nn.Parameter(torch.zeros(channels))
        self.eps = eps

    def forward(self, x):
        return F.instance_norm(x, weight=self.weight, bias=self.bias, eps=self.eps)


def get_inputs():
    return [torch.randn(batch_size, channels, height, width)]


def get_init_inputs():
    return [channels, eps]
