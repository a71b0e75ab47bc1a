import torch
import torch.nn as nn

batch_size = 4096
dim = 11008
min_value = -1.0
max_value = 1.0


class Model(nn.Module):
    """Clamp to [min_value, max_value] (hardtanh)."""

    def __init__(self, min_value, max_value):
        super().__init__()
        self.min_value = min_value
        self.max_value = max_value

    def forward(self, x):
        return torch.clamp(x, min=self.min_value, max=self.max_value)


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return [min_value, max_value]
