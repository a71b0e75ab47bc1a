"""Decode-step attention over a batch of caches with different lengths (padded cache, per-sequence length).

q: (B, H, D), one token per sequence; k_cache, v_cache: (B, H, S_MAX, D) of which the first
cache_seqlens[b] positions are valid for sequence b; positions beyond are garbage and must be ignored.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 16
H = 32
S_MAX = 4096
D = 128


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k_cache, v_cache, cache_seqlens):
        positions = torch.arange(k_cache.shape[2], device=q.device)
        valid = positions[None, :] < cache_seqlens[:, None]  # (B, S_MAX)
        out = F.scaled_dot_product_attention(q[:, :, None, :], k_cache, v_cache, attn_mask=valid[:, None, None, :])
        return out[:, :, 0, :]


def get_inputs():
    q = torch.randn(B, H, D)
    k_cache = torch.randn(B, H, S_MAX, D)
    v_cache = torch.randn(B, H, S_MAX, D)
    cache_seqlens = torch.randint(1, S_MAX + 1, (B,), dtype=torch.int32)
    return [q, k_cache, v_cache, cache_seqlens]


def get_init_inputs():
    return []
