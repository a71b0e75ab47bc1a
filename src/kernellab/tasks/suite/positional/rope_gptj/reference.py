import torch
import torch.nn as nn

batch_size = 4
seq_len = 4096
num_heads = 32
head_dim = 128
rope_theta = 10000.0


class Model(nn.Module):
    """x: [batch, seq, heads, head_dim]; cos, sin: [seq, head_dim // 2]. Rotates interleaved pairs."""

    def __init__(self):
        super().__init__()

    def forward(self, x, cos, sin):
        cos, sin = cos[:, None, :], sin[:, None, :]
        x1, x2 = x[..., 0::2], x[..., 1::2]
        rotated = torch.stack([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
        return rotated.flatten(-2)


def rope_tables(length, rotary_dim, theta):
    """cos and sin of position * inverse frequency: [length, rotary_dim // 2] each."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim))
    angles = torch.arange(length, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return angles.cos(), angles.sin()


def get_inputs():
    x = torch.randn(batch_size, seq_len, num_heads, head_dim)
    cos, sin = rope_tables(seq_len, head_dim, rope_theta)
    return [x, cos, sin]


def get_init_inputs():
    return []
