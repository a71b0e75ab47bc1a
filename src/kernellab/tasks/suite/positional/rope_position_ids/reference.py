import torch
import torch.nn as nn

num_tokens = 16384
num_heads = 32
head_dim = 128
max_position = 8192
rope_theta = 500000.0


class Model(nn.Module):
    """query: [num_tokens, heads, head_dim]; positions: [num_tokens] int64;
    cos_sin_cache: [max_position, head_dim] = [cos | sin]. Returns the rotated query (half-split).
    """

    def __init__(self):
        super().__init__()

    def forward(self, query, positions, cos_sin_cache):
        cos, sin = cos_sin_cache[positions].chunk(2, dim=-1)
        cos, sin = cos[:, None, :], sin[:, None, :]
        x1, x2 = query.chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def get_inputs():
    query = torch.randn(num_tokens, num_heads, head_dim)
    positions = torch.randint(0, max_position, (num_tokens,))
    inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    angles = torch.arange(max_position, dtype=torch.float64)[:, None] * inv_freq[None, :]
    cos_sin_cache = torch.cat([angles.cos(), angles.sin()], dim=-1)
    return [query, positions, cos_sin_cache]


def get_init_inputs():
    return []
