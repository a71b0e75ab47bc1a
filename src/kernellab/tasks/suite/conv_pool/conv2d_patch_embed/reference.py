"""ViT patch embedding: a PATCH x PATCH convolution with stride PATCH (non-overlapping patches), with
bias, flattened to a token sequence (N x num_patches x D)."""
import torch
import torch.nn as nn

N = 64
C_IN = 3
D = 768
IMG = 224
PATCH = 16


class Model(nn.Module):
    def __init__(self, c_in, dim, patch):
        super().__init__()
        self.proj = nn.Conv2d(c_in, dim, kernel_size=patch, stride=patch, bias=True)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


def get_inputs():
    return [torch.randn(N, C_IN, IMG, IMG)]


def get_init_inputs():
    return [C_IN, D, PATCH]
