import torch
import torch.nn as nn

batch_size = 8
num_heads = 16
grid_h = 32
grid_w = 32
head_dim = 64
rope_theta = 100.0


def rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1)


class Model(nn.Module):
    """x: [batch, heads, grid_h * grid_w, head_dim] (row-major patches);
    cos_h, sin_h: [grid_h, head_dim // 4]; cos_w, sin_w: [grid_w, head_dim // 4].
    """

    def __init__(self):
        super().__init__()

    def forward(self, x, cos_h, sin_h, cos_w, sin_w):
        gh, gw, quarter = cos_h.shape[0], cos_w.shape[0], cos_h.shape[1]
        cos_rows = cos_h[:, None, :].expand(gh, gw, quarter).reshape(gh * gw, quarter)
        sin_rows = sin_h[:, None, :].expand(gh, gw, quarter).reshape(gh * gw, quarter)
        cos_cols = cos_w[None, :, :].expand(gh, gw, quarter).reshape(gh * gw, quarter)
        sin_cols = sin_w[None, :, :].expand(gh, gw, quarter).reshape(gh * gw, quarter)
        x_rows, x_cols = x.chunk(2, dim=-1)
        return torch.cat([rotate(x_rows, cos_rows, sin_rows), rotate(x_cols, cos_cols, sin_cols)], dim=-1)


def axis_tables(length, dim, theta):
    inv_freq = 1.0 / (theta ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    angles = torch.arange(length, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return angles.cos(), angles.sin()


def get_inputs():
    x = torch.randn(batch_size, num_heads, grid_h * grid_w, head_dim)
    cos_h, sin_h = axis_tables(grid_h, head_dim // 2, rope_theta)
    cos_w, sin_w = axis_tables(grid_w, head_dim // 2, rope_theta)
    return [x, cos_h, sin_h, cos_w, sin_w]


def get_init_inputs():
    return []
