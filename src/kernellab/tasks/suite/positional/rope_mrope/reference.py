import torch
import torch.nn as nn

num_tokens = 8192
num_heads = 28
head_dim = 128
max_position = 32768
rope_theta = 1000000.0
mrope_section = (16, 24, 24)


class Model(nn.Module):
    """query: [num_tokens, heads, head_dim]; positions: [3, num_tokens] int64 (t, h, w);
    cos_sin_cache: [max_position, head_dim] = [cos | sin]. Returns the rotated query (half-split).
    """

    def __init__(self, mrope_section):
        super().__init__()
        self.mrope_section = list(mrope_section)

    def forward(self, query, positions, cos_sin_cache):
        cos, sin = cos_sin_cache[positions].chunk(2, dim=-1)  # [3, num_tokens, head_dim // 2]
        cos = torch.cat([c[i] for i, c in enumerate(cos.split(self.mrope_section, dim=-1))], dim=-1)
        sin = torch.cat([s[i] for i, s in enumerate(sin.split(self.mrope_section, dim=-1))], dim=-1)
        cos, sin = cos[:, None, :], sin[:, None, :]
        x1, x2 = query.chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


def get_inputs():
    query = torch.randn(num_tokens, num_heads, head_dim)
    positions = torch.randint(0, max_position, (3, num_tokens))
    inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    angles = torch.arange(max_position, dtype=torch.float64)[:, None] * inv_freq[None, :]
    cos_sin_cache = torch.cat([angles.cos(), angles.sin()], dim=-1)
    return [query, positions, cos_sin_cache]


def get_init_inputs():
    return [mrope_section]
