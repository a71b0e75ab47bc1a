import torch
import torch.nn as nn

batch_size = 4
seq_len = 2048
num_heads = 64
head_dim = 96
rotary_dim = 24
rope_theta = 10000.0


class Model(nn.Module):
    """x: [batch, seq, heads, head_dim]; cos, sin: [seq, rotary_dim // 2].

    Rotates x[..., :rotary_dim] in the half-split layout and keeps x[..., rotary_dim:].
    """

    def __init__(self):
        super().__init__()

    def forward(self, x, cos, sin):
        rotary_dim = 2 * cos.shape[-1]
        cos, sin = cos[:, None, :], sin[:, None, :]
        x_rot, x_pass = x[..., :rotary_dim], x[..., rotary_dim:]
        x1, x2 = x_rot.chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x_pass], dim=-1)


def rope_tables(length, rotary_dim, theta):
    """cos and sin of position * inverse frequency: [length, rotary_dim // 2] each."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim))
    angles = torch.arange(length, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return angles.cos(), angles.sin()


def get_inputs():
    x = torch.randn(batch_size, seq_len, num_heads, head_dim)
    cos, sin = rope_tables(seq_len, rotary_dim, rope_theta)
    return [x, cos, sin]


def get_init_inputs():
    return []
