"""Causal depthwise 1-D convolution + SiLU, as in Mamba blocks (causal-conv1d): each channel is filtered
with a length-K kernel over the current and K - 1 previous positions."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 8
D = 4096
L = 2048
K = 4


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv1d(channels, channels, kernel_size, groups=channels, padding=kernel_size - 1, bias=True)

    def forward(self, x):
        length = x.shape[-1]
        return F.silu(self.conv(x)[..., :length])


def get_inputs():
    return [torch.randn(B, D, L)]


def get_init_inputs():
    return [D, K]
