import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 4096
dim = 11008
alpha = 1.0


class Model(nn.Module):
    """ELU: x if x > 0 else alpha * (exp(x) - 1)."""

    def __init__(self, alpha):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return F.elu(x, alpha=self.alpha)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [alpha]
