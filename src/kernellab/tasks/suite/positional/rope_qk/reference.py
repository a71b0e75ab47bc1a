import torch
import torch.nn as nn

batch_size = 4
seq_len = 4096
num_q_heads = 32
num_kv_heads = 8
head_dim = 128
rope_theta = 500000.0


def rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model(nn.Module):
    """q: [batch, seq, q_heads, head_dim]; k: [batch, seq, kv_heads, head_dim];
    cos, sin: [seq, head_dim // 2]. Returns (rotated q, rotated k).
    """

    def __init__(self):
        super().__init__()

    def forward(self, q, k, cos, sin):
        cos, sin = cos[:, None, :], sin[:, None, :]
        return rotate(q, cos, sin), rotate(k, cos, sin)


def rope_tables(length, rotary_dim, theta):
    """cos and sin of position * inverse frequency: [length, rotary_dim // 2] each."""
    inv_freq = 1.0 / (theta ** (torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim))
    angles = torch.arange(length, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return angles.cos(), angles.sin()


def get_inputs():
    q = torch.randn(batch_size, seq_len, num_q_heads, head_dim)
    k = torch.randn(batch_size, seq_len, num_kv_heads, head_dim)
    cos, sin = rope_tables(seq_len, head_dim, rope_theta)
    return [q, k, cos, sin]


def get_init_inputs():
    return []
