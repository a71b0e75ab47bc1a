import math

import torch
import torch.nn as nn

num_tokens = 16384
num_heads = 32
head_dim = 128
max_position = 131072
rope_theta = 500000.0
factor = 8.0
low_freq_factor = 1.0
high_freq_factor = 4.0
original_max_position = 8192


class Model(nn.Module):
    """query: [num_tokens, heads, head_dim]; positions: [num_tokens] int64.

    Angles and the rotation are computed in at least float32; the result has the dtype of query.
    """

    def __init__(self, head_dim, theta, factor, low_freq_factor, high_freq_factor, original_max_position):
        super().__init__()
        self.head_dim = head_dim
        self.theta = theta
        self.factor = factor
        self.low_freq_factor = low_freq_factor
        self.high_freq_factor = high_freq_factor
        self.original_max_position = original_max_position

    def inv_freq(self, dtype, device):
        d = self.head_dim
        inv_freq = 1.0 / (self.theta ** (torch.arange(0, d, 2, dtype=dtype, device=device) / d))
        wavelen = 2 * math.pi / inv_freq
        low_freq_wavelen = self.original_max_position / self.low_freq_factor
        high_freq_wavelen = self.original_max_position / self.high_freq_factor
        smooth = ((self.original_max_position / wavelen - self.low_freq_factor)
                  / (self.high_freq_factor - self.low_freq_factor))
        smoothed = (1 - smooth) * inv_freq / self.factor + smooth * inv_freq
        return torch.where(wavelen > low_freq_wavelen, inv_freq / self.factor,
                           torch.where(wavelen < high_freq_wavelen, inv_freq, smoothed))

    def forward(self, query, positions):
        work = torch.promote_types(query.dtype, torch.float32)
        angles = positions.to(work)[:, None] * self.inv_freq(work, query.device)[None, :]
        cos, sin = angles.cos()[:, None, :], angles.sin()[:, None, :]
        x1, x2 = query.to(work).chunk(2, dim=-1)
        out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
        return out.to(query.dtype)


def get_inputs():
    query = torch.randn(num_tokens, num_heads, head_dim)
    positions = torch.randint(0, max_position, (num_tokens,))
    return [query, positions]


def get_init_inputs():
    return [head_dim, rope_theta, factor, low_freq_factor, high_freq_factor, original_max_position]
