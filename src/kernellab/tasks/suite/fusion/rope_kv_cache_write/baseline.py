"""Baseline: Triton, one program per (sequence, kv head, token) moving one head_dim vector of k (rotated)
and one of v into the caches: B * KV_HEADS * T tiny programs, each loading the cos/sin row again.
Moves the 4 * B * KV_HEADS * T * D elements that must move.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rope_cache_kernel(k_ptr, v_ptr, lens_ptr, kc_ptr, vc_ptr, cos_ptr, sin_ptr, H, T, D, S_MAX,
                       BLOCK_HALF: tl.constexpr):
    bh = tl.program_id(0)
    t = tl.program_id(1)
    b = bh // H
    half = D // 2
    i = tl.arange(0, BLOCK_HALF)
    m = i < half
    pos = tl.load(lens_ptr + b) + t
    src = (bh * T + t) * D
    dst = (bh * S_MAX + pos) * D
    k1 = tl.load(k_ptr + src + i, mask=m, other=0.0).to(tl.float32)
    k2 = tl.load(k_ptr + src + half + i, mask=m, other=0.0).to(tl.float32)
    c = tl.load(cos_ptr + pos * half + i, mask=m, other=0.0)
    s = tl.load(sin_ptr + pos * half + i, mask=m, other=0.0)
    tl.store(kc_ptr + dst + i, (k1 * c - k2 * s).to(kc_ptr.dtype.element_ty), mask=m)
    tl.store(kc_ptr + dst + half + i, (k2 * c + k1 * s).to(kc_ptr.dtype.element_ty), mask=m)
    v1 = tl.load(v_ptr + src + i, mask=m, other=0.0)
    v2 = tl.load(v_ptr + src + half + i, mask=m, other=0.0)
    tl.store(vc_ptr + dst + i, v1, mask=m)
    tl.store(vc_ptr + dst + half + i, v2, mask=m)


class ModelNew(nn.Module):
    def __init__(self, head_dim, max_pos, theta):
        super().__init__()
        inv_freq = theta ** (-torch.arange(0, head_dim, 2, dtype=torch.float64) / head_dim)
        angles = torch.arange(max_pos, dtype=torch.float64)[:, None] * inv_freq[None, :]
        self.register_buffer("cos_cached", angles.cos().float())
        self.register_buffer("sin_cached", angles.sin().float())

    def forward(self, k_new, v_new, cache_lens, k_cache, v_cache):
        k_new, v_new, cache_lens = k_new.contiguous(), v_new.contiguous(), cache_lens.contiguous()
        B, H, T, D = k_new.shape
        S_MAX = k_cache.shape[2]
        _rope_cache_kernel[(B * H, T)](k_new, v_new, cache_lens, k_cache, v_cache, self.cos_cached, self.sin_cached,
                                       H, T, D, S_MAX, BLOCK_HALF=max(16, triton.next_power_of_2(D // 2)))
