"""Depthwise KxK convolution (ConvNeXt block: 7x7, groups = channels, padding K // 2, bias)."""
import torch
import torch.nn as nn

N = 32
C = 384
H = 28
W = 28
K = 7


class Model(nn.Module):
    def __init__(self, channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, kernel_size, padding=kernel_size // 2, groups=channels, bias=True)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [C, K]
