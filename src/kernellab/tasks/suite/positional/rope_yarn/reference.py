import math

import torch
import torch.nn as nn

num_tokens = 16384
num_heads = 32
head_dim = 128
max_position = 131072
rope_theta = 1000000.0
factor = 4.0
original_max_position = 32768
beta_fast = 32.0
beta_slow = 1.0


def correction_dim(num_rotations, dim, theta, original_max_position):
    return (dim * math.log(original_max_position / (num_rotations * 2 * math.pi))) / (2 * math.log(theta))


class Model(nn.Module):
    """query: [num_tokens, heads, head_dim]; positions: [num_tokens] int64.

    Angles and the rotation are computed in at least float32; the result has the dtype of query.
    """

    def __init__(self, head_dim, theta, factor, original_max_position, beta_fast, beta_slow):
        super().__init__()
        self.head_dim = head_dim
        self.theta = theta
        self.factor = factor
        low = math.floor(correction_dim(beta_fast, head_dim, theta, original_max_position))
        high = math.ceil(correction_dim(beta_slow, head_dim, theta, original_max_position))
        self.low = max(low, 0)
        self.high = min(high, head_dim - 1)
        self.mscale = 0.1 * math.log(factor) + 1.0

    def inv_freq(self, dtype, device):
        d = self.head_dim
        pos_freqs = self.theta ** (torch.arange(0, d, 2, dtype=dtype, device=device) / d)
        extrapolation = 1.0 / pos_freqs
        interpolation = 1.0 / (self.factor * pos_freqs)
        span = max(self.high - self.low, 0.001)
        ramp = ((torch.arange(d // 2, dtype=dtype, device=device) - self.low) / span).clamp(0, 1)
        keep = 1 - ramp  # share of the original (extrapolated) frequency
        return interpolation * (1 - keep) + extrapolation * keep

    def forward(self, query, positions):
        work = torch.promote_types(query.dtype, torch.float32)
        angles = positions.to(work)[:, None] * self.inv_freq(work, query.device)[None, :]
        cos = (angles.cos() * self.mscale)[:, None, :]
        sin = (angles.sin() * self.mscale)[:, None, :]
        x1, x2 = query.to(work).chunk(2, dim=-1)
        out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)
        return out.to(query.dtype)


def get_inputs():
    query = torch.randn(num_tokens, num_heads, head_dim)
    positions = torch.randint(0, max_position, (num_tokens,))
    return [query, positions]


def get_init_inputs():
    return [head_dim, rope_theta, factor, original_max_position, beta_fast, beta_slow]
