import torch
import torch.nn as nn

batch_size = 2
seq_len = 2048
num_q_heads = 32
num_kv_heads = 8
head_dim = 128
rope_theta = 10000.0


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


class Model(nn.Module):
    """Hugging Face's apply_rotary_pos_emb: q: [batch, q_heads, seq, head_dim], k: [batch, kv_heads, seq,
    head_dim]; cos, sin: [batch, seq, head_dim] (each frequency twice). Returns (rotated q, rotated k).
    """

    def __init__(self):
        super().__init__()

    def forward(self, q, k, cos, sin):
        cos = cos.unsqueeze(1)
        sin = sin.unsqueeze(1)
        q_embed = (q * cos) + (rotate_half(q) * sin)
        k_embed = (k * cos) + (rotate_half(k) * sin)
        return q_embed, k_embed


def get_inputs():
    q = torch.randn(batch_size, num_q_heads, seq_len, head_dim)
    k = torch.randn(batch_size, num_kv_heads, seq_len, head_dim)
    inv_freq = 1.0 / (rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim))
    positions = torch.arange(seq_len, dtype=torch.float64)[None, :] + torch.randint(0, 64, (batch_size, 1))
    angles = positions[:, :, None] * inv_freq[None, None, :]
    emb = torch.cat([angles, angles], dim=-1)
    return [q, k, emb.cos(), emb.sin()]


def get_init_inputs():
    return []
