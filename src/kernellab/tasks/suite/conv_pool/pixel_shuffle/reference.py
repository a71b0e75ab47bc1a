"""Pixel shuffle (sub-pixel convolution upsampling): (N, C * R^2, H, W) -> (N, C, H * R, W * R)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N = 16
C = 64
H = 128
W = 128
R = 2


class Model(nn.Module):
    def __init__(self, upscale):
        super().__init__()
        self.upscale = upscale

    def forward(self, x):
        return F.pixel_shuffle(x, self.upscale)


def get_inputs():
    return [torch.randn(N, C * R * R, H, W)]


def get_init_inputs():
    return [R]
