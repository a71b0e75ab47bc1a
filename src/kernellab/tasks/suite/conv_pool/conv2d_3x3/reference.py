"""3x3 convolution, stride 1, padding 1, with bias (ResNet / U-Net body), NCHW."""
import torch
import torch.nn as nn

N = 32
C_IN = 256
C_OUT = 256
H = 56
W = 56


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=True)

    def forward(self, x):
        return self.conv(x)


def get_inputs():
    return [torch.randn(N, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT]
