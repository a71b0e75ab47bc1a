"""ResNet stem convolution: 7x7 kernel, stride 2, padding 3, no bias, from 3 input channels."""
import torch
import torch.nn as nn

N = 64
C_IN = 3
C_OUT = 64
H = 224
W = 224


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=7, stride=2, padding=3, bias=False)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(N, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT]
