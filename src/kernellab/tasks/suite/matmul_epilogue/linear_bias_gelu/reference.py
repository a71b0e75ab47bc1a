"""Affine layer followed by exact (erf) GELU: y = gelu(x @ W^T + b), as in BERT / ViT MLPs."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M = 4096
K = 1024
N = 4096


class Model(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        return F.gelu(self.linear(x))


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N]
