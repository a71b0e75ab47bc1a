"""Decode-step attention: one new query token per sequence against a long KV cache (MHA)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 8
H = 32
S = 4096
D = 128


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k_cache, v_cache):
        return F.scaled_dot_product_attention(q, k_cache, v_cache)


def get_inputs():
    return [torch.randn(B, H, 1, D), torch.randn(B, H, S, D), torch.randn(B, H, S, D)]


def get_init_inputs():
    return []
