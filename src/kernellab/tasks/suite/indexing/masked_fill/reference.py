import torch
import torch.nn as nn

batch_size = 16
seq_len = 2048
dim = 1024


class Model(nn.Module):
    """x: [batch, seq, dim]; pad_mask: [batch, seq] bool, True = padding. Returns x with pads zeroed."""

    def __init__(self):
        super().__init__()

    def forward(self, x, pad_mask):
        return x.masked_fill(pad_mask.unsqueeze(-1), 0.0)


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim), torch.rand(batch_size, seq_len) < 0.3]


def get_init_inputs():
    return []
