"""Max pooling, 3x3 window, stride 2, padding 1 (ResNet stem), NCHW."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N = 64
C = 64
H = 112
W = 112


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.max_pool2d(x, kernel_size=3, stride=2, padding=1)


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return []
