"""Decode-step grouped-query attention (Llama-3): one token per sequence, H query heads over HKV cached heads."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 16
H = 32
HKV = 8
S = 8192
D = 128


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k_cache, v_cache):
        # Query head h belongs to kv head h // G: viewing q as (B, HKV, G, D) gives each kv head its
        # G query rows, which is exact GQA without materializing repeated k and v.
        b, h, _, d = q.shape
        hkv = k_cache.shape[1]
        out = F.scaled_dot_product_attention(q.reshape(b, hkv, h // hkv, d), k_cache, v_cache)
        return out.reshape(b, h, 1, d)


def get_inputs():
    return [torch.randn(B, H, 1, D), torch.randn(B, HKV, S, D), torch.randn(B, HKV, S, D)]


def get_init_inputs():
    return []
