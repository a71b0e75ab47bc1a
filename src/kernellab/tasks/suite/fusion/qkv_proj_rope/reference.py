"""Fused QKV projection + rotary position embedding (Llama / GQA): one GEMM producing q, k and v, RoPE
applied to q and k (rotate-half convention), outputs in the attention layout (B, heads, S, D).

cos_cached / sin_cached: float32 tables (MAX_POS x D/2) of cos and sin of position * theta^(-2i/D);
positions: (B, S) int64 absolute positions (each sequence starts at its own offset).
"""
import torch
import torch.nn as nn

B = 4
S = 2048
HIDDEN = 4096
HEADS = 32
KV_HEADS = 8
HEAD_DIM = 128
MAX_POS = 8192
THETA = 500000.0


def apply_rope(x, cos, sin):
    # x: (B, S, heads, D); cos, sin: (B, S, 1, D/2) float32
    half = x.shape[-1] // 2
    xf = x.to(torch.promote_types(x.dtype, torch.float32))
    x1, x2 = xf[..., :half], xf[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


class Model(nn.Module):
    def __init__(self, hidden, heads, kv_heads, head_dim, max_pos, theta):
        super().__init__()
        self.heads, self.kv_heads, self.head_dim = heads, kv_heads, head_dim
        self.qkv_proj = nn.Linear(hidden, (heads + 2 * kv_heads) * head_dim, bias=False)
        inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angles = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv_freq[None, :]
        self.register_buffer("cos_cached", angles.cos().float())
        self.register_buffer("sin_cached", angles.sin().float())

    def forward(self, x, positions):
        b, s, _ = x.shape
        d = self.head_dim
        qkv = self.qkv_proj(x)
        q, k, v = qkv.split([self.heads * d, self.kv_heads * d, self.kv_heads * d], dim=-1)
        q = q.reshape(b, s, self.heads, d)
        k = k.reshape(b, s, self.kv_heads, d)
        v = v.reshape(b, s, self.kv_heads, d)
        cos = self.cos_cached[positions][:, :, None, :]
        sin = self.sin_cached[positions][:, :, None, :]
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        return q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)


def get_inputs():
    x = torch.randn(B, S, HIDDEN)
    start = torch.randint(0, MAX_POS - S + 1, (B, 1))
    positions = start + torch.arange(S)[None, :]
    return [x, positions]


def get_init_inputs():
    return [HIDDEN, HEADS, KV_HEADS, HEAD_DIM, MAX_POS, THETA]
