"""Bilinear 2x upsampling with align_corners=False (segmentation decoders, FPN), NCHW."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N = 16
C = 256
H = 64
W = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return []
