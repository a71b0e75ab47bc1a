import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4
seq_len = 4096
dim = 1536
eps = 1e-6


class Model(nn.Module):
    """x: [batch, seq, dim]; shift, scale: [batch, dim]. Returns layer_norm(x) * (1 + scale) + shift."""

    def __init__(self, eps):
        super().__init__()
        self.eps = eps

    def forward(self, x, shift, scale):
        normed = F.layer_norm(x, (x.shape[-1],), eps=self.eps)
        return normed * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


def get_inputs():
    x = torch.randn(batch_size, seq_len, dim)
    shift = torch.randn(batch_size, dim)
    scale = torch.randn(batch_size, dim) * 0.5
    return [x, shift, scale]


def get_init_inputs():
    return [eps]
