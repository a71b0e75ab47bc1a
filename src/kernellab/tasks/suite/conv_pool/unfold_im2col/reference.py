"""im2col (torch.nn.functional.unfold): KxK patches with padding K // 2, stride 1, laid out as columns."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N = 16
C = 64
H = 56
W = 56
K = 3


class Model(nn.Module):
    def __init__(self, kernel_size):
        super().__init__()
        self.kernel_size = kernel_size

    def forward(self, x):
        return F.unfold(x, kernel_size=self.kernel_size, padding=self.kernel_size // 2)


def get_inputs():
    return [torch.randn(N, C, H, W)]


def get_init_inputs():
    return [K]
