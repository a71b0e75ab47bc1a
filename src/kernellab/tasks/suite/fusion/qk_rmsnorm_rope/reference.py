"""Per-head QK-norm followed by RoPE (Qwen3 / OLMo-2 attention inputs): RMSNorm over head_dim with
separate learned weights for q and k, then rotate-half rotary embeddings at the given positions."""
import torch
import torch.nn as nn

B = 4
S = 2048
HEADS = 32
KV_HEADS = 8
HEAD_DIM = 128
MAX_POS = 8192
EPS = 1e-6
THETA = 1000000.0


def rms_norm(x, weight, eps):
    xf = x.to(torch.promote_types(x.dtype, torch.float32))
    return (xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + eps)).to(x.dtype) * weight


def apply_rope(x, cos, sin):
    half = x.shape[-1] // 2
    xf = x.to(torch.promote_types(x.dtype, torch.float32))
    x1, x2 = xf[..., :half], xf[..., half:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], dim=-1).to(x.dtype)


class Model(nn.Module):
    def __init__(self, head_dim, max_pos, eps, theta):
        super().__init__()
        self.q_norm = nn.Parameter(torch.ones(head_dim))
        self.k_norm = nn.Parameter(torch.ones(head_dim))
        self.eps = eps
        inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angles = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv_freq[None, :]
        self.register_buffer("cos_cached", angles.cos().float())
        self.register_buffer("sin_cached", angles.sin().float())

    def forward(self, q, k, positions):
        cos = self.cos_cached[positions][:, :, None, :]
        sin = self.sin_cached[positions][:, :, None, :]
        q = apply_rope(rms_norm(q, self.q_norm, self.eps), cos, sin)
        k = apply_rope(rms_norm(k, self.k_norm, self.eps), cos, sin)
        return q, k


def get_inputs():
    q = torch.randn(B, S, HEADS, HEAD_DIM)
    k = torch.randn(B, S, KV_HEADS, HEAD_DIM)
    start = torch.randint(0, MAX_POS - S + 1, (B, 1))
    return [q, k, start + torch.arange(S)[None, :]]


def get_init_inputs():
    return [HEAD_DIM, MAX_POS, EPS, THETA]
