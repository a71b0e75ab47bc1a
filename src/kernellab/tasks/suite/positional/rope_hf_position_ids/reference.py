import torch
import torch.nn as nn

batch_size = 4
seq_len = 2048
num_q_heads = 16
num_kv_heads = 4
head_dim = 128
max_position = 8192
rope_theta = 500000.0


class Model(nn.Module):
    """Rotary embedding of queries and keys as a model-graph extractor writes it: rotate_half through
    chunk and cat, cos and sin gathered from [max_position, head_dim] caches by position ids [batch, seq].
    q: [batch, q_heads, seq, head_dim]; k: [batch, kv_heads, seq, head_dim]. Returns (rotated q, rotated k).
    """

    def __init__(self):
        super().__init__()

    def forward(self, q, k, cos_cache, sin_cache, position_ids):
        cos = cos_cache[position_ids].unsqueeze(1)
        sin = sin_cache[position_ids].unsqueeze(1)
        q1, q2 = q.chunk(2, dim=-1)
        k1, k2 = k.chunk(2, dim=-1)
        q_out = q * cos + torch.cat((-q2, q1), dim=-1) * sin
        k_out = k * cos + torch.cat((-k2, k1), dim=-1) * sin
        return q_out, k_out


def get_inputs():
    q = torch.randn(batch_size, num_q_heads, seq_len, head_dim)
    k = torch.randn(batch_size, num_kv_heads, seq_len, head_dim)
    inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    angles = torch.arange(max_position, dtype=torch.float64)[:, None] * inv_freq[None, :]
    emb = torch.cat([angles, angles], dim=-1)
    position_ids = torch.randint(0, max_position, (batch_size, seq_len))
    return [q, k, emb.cos(), emb.sin(), position_ids]


def get_init_inputs():
    return []
