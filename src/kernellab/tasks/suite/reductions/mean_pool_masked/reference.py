import torch
import torch.nn as nn

batch_size = 128
seq_len = 512
dim = 1024


class Model(nn.Module):
    """x: [batch, seq, dim]; mask: [batch, seq] bool. Returns the mean of x over unmasked tokens."""

    def __init__(self):
        super().__init__()

    def forward(self, x, mask):
        m = mask.to(x.dtype).unsqueeze(-1)
        return (x * m).sum(dim=1) / m.sum(dim=1)


def get_inputs():
    x = torch.randn(batch_size, seq_len, dim)
    mask = torch.rand(batch_size, seq_len) > 0.3
    mask[:, 0] = True  # every sequence has at least one token
    return [x, mask]


def get_init_inputs():
    return []
