"""Inference-time Conv3x3 + BatchNorm (running statistics) + ReLU, the basic ResNet unit."""
import torch
import torch.nn as nn
import torch.nn.functional as F

N = 32
C_IN = 128
C_OUT = 128
H = 56
W = 56
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, c_in, c_out, eps):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=3, padding=1, bias=False)
        self.bn_weight = nn.Parameter(torch.ones(c_out))
        self.bn_bias = nn.Parameter(torch.zeros(c_out))
        self.register_buffer("running_mean", torch.zeros(c_out))
        self.register_buffer("running_var", torch.ones(c_out))
        self.eps = eps

    def forward(self, x):
        y = F.batch_norm(self.conv(x), self.running_mean, self.running_var, self.bn_weight, self.bn_bias,
                         training=False, eps=self.eps)
        return torch.relu(y)


def get_inputs():
    return [torch.randn(N, C_IN, H, W)]


def get_init_inputs():
    return [C_IN, C_OUT, EPS]
