import torch
import torch.nn as nn

batch_size = 2
seq_len = 8192
num_heads = 32
head_dim = 128
rope_theta = 10000.0
factor = 2.0
original_max_position = 4096


class Model(nn.Module):
    """x: [batch, seq, heads, head_dim] at positions 0..seq-1.

    Angles and the rotation are computed in at least float32; the result has the dtype of x.
    """

    def __init__(self, head_dim, theta, factor, original_max_position):
        super().__init__()
        self.head_dim = head_dim
        self.theta = theta
        self.factor = factor
        self.original_max_position = original_max_position

    def forward(self, x):
        seq, d = x.shape[1], self.head_dim
        base = self.theta
        if seq > self.original_max_position:
            scale = self.factor * seq / self.original_max_position - (self.factor - 1)
            base = self.theta * scale ** (d / (d - 2))
        work = torch.promote_types(x.dtype, torch.float32)
        inv_freq = 1.0 / (base ** (torch.arange(0, d, 2, dtype=work, device=x.device) / d))
        angles = torch.arange(seq, dtype=work, device=x.device)[:, None] * inv_freq[None, :]
        cos, sin = angles.cos()[:, None, :], angles.sin()[:, None, :]
        x1, x2 = x.to(work).chunk(2, dim=-1)
        return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


def get_inputs():
    return [torch.randn(batch_size, seq_len, num_heads, head_dim)]


def get_init_inputs():
    return [head_dim, rope_theta, factor, original_max_position]
