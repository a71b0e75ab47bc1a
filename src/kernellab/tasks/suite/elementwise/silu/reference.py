import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 11008


class Model(nn.Module):
    """SiLU / swish: x * sigmoid(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        return F.silu(x)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
