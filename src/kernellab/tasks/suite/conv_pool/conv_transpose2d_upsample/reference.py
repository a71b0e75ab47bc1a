"""Learned 2x upsampling (U-Net decoder): ConvTranspose2d with a 2x2 kernel and stride 2, with bias."""
import torch
import torch.nn as nn

N = 16
C_IN = 256
C_OUT = 128
H = 64
W = 64


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.up = nn.ConvTranspose2d(c_in, c_out, kernel_size=2, stride=2, bias=True)

    def forward(self, x):
        return self.up(x)


def get_inputs():
    return [torch.randn(N, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT]
