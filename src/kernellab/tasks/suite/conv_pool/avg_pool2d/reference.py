"""Average pooling, 3x3 window, stride 2, padding 1, padded zeros excluded from the divisor
(count_include_pad=False), NCHW."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N = 64
C = 256
H = 56
W = 56


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.avg_pool2d(x, kernel_size=3, stride=2, padding=1, count_include_pad=False)


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return []
