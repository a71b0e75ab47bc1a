"""1x1 (pointwise) convolution with bias, NCHW: a per-pixel channel-mixing GEMM (MobileNet / ResNet
bottleneck projections)."""
import torch
import torch.nn as nn

N = 32
C_IN = 256
C_OUT = 1024
H = 28
W = 28


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=1, bias=True)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(N, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT]
