import math

import torch
import torch.nn as nn

batch_size = 16
seq_len = 2048
dim = 1024


class Model(nn.Module):
    """x: [batch, seq, dim], dim even. Returns x + pe[:seq], pe formed in at least float32."""

    def __init__(self):
        super().__init__()

    def forward(self, x):
        seq, dim = x.shape[1], x.shape[2]
        work = torch.promote_types(x.dtype, torch.float32)
        position = torch.arange(seq, dtype=work, device=x.device)[:, None]
        even = torch.arange(0, dim, 2, dtype=work, device=x.device)
        div_term = torch.exp(even * (-math.log(10000.0) / dim))
        pe = torch.zeros(seq, dim, dtype=work, device=x.device)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        return (x.to(work) + pe).to(x.dtype)


def get_inputs():
    return [torch.randn(batch_size, seq_len, dim)]


def get_init_inputs():
    return []
