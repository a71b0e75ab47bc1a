"""Prefill KV-cache write: rotate the new keys with RoPE and store keys and values of T new tokens into
a preallocated cache at each sequence's current length (vLLM reshape_and_cache with rotary applied).

k_new, v_new: (B, KV_HEADS, T, D); cache_lens: (B,) int64 (T new tokens go to positions
cache_lens[b] .. cache_lens[b] + T - 1); k_cache, v_cache: (B, KV_HEADS, S_MAX, D), updated in place.
"""
import torch
import torch.nn as nn

B = 8
KV_HEADS = 8
T = 2048
D = 128
S_MAX = 8192
THETA = 500000.0


class Model(nn.Module):
    def __init__(self, head_dim, max_pos, theta):
        super().__init__()
        inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angles = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv_freq[None, :]
        self.register_buffer("cos_cached", angles.cos().float())
        self.register_buffer("sin_cached", angles.sin().float())

    def forward(self, k_new, v_new, cache_lens, k_cache, v_cache):
        tokens = k_new.shape[2]
        half = k_new.shape[-1] // 2
        for b, start in enumerate(cache_lens.tolist()):
            cos = self.cos_cached[start:start + tokens][None]  # (1, T, D/2)
            sin = self.sin_cached[start:start + tokens][None]
            kf = k_new[b].to(torch.promote_types(k_new.dtype, torch.float32))
            k1, k2 = kf[..., :half], kf[..., half:]
            rotated = torch.cat([k1 * cos - k2 * sin, k2 * cos + k1 * sin], dim=-1)
            k_cache[b, :, start:start + tokens] = rotated.to(k_cache.dtype)
            v_cache[b, :, start:start + tokens] = v_new[b]


def get_inputs():
    k_new = torch.randn(B, KV_HEADS, T, D)
    v_new = torch.randn(B, KV_HEADS, T, D)
    cache_lens = torch.randint(0, S_MAX - T + 1, (B,))
    k_cache = torch.randn(B, KV_HEADS, S_MAX, D)
    v_cache = torch.randn(B, KV_HEADS, S_MAX, D)
    return [k_new, v_new, cache_lens, k_cache, v_cache]


def get_init_inputs():
    return [D, S_MAX, THETA]
