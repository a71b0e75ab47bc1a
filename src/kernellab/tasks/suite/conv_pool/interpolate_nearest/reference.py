"""Nearest-neighbour 2x upsampling (Stable Diffusion U-Net / VAE Upsample2D), NCHW."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N = 8
C = 640
H = 32
W = 32


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.interpolate(x, scale_factor=2.0, mode="nearest")


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return []
