"""Attention with an additive float mask shared by all heads (padding plus a learned-bias-like term).

mask: (B, 1, L, L) added to the scaled scores before the softmax; keys past each sequence's valid
length carry -30000 (finite in fp16), so every query row keeps at least one unmasked key.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 8
H = 16
L = 1024
D = 64


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def get_inputs():
    q, k, v = torch.randn(B, H, L, D), torch.randn(B, H, L, D), torch.randn(B, H, L, D)
    lengths = torch.randint(1, L + 1, (B,))
    padded = torch.arange(L)[None, :] >= lengths[:, None]  # (B, L) keys past the valid length
    mask = torch.randn(B, 1, L, L)
    mask = mask.masked_fill(padded[:, None, None, :], -30000.0)
    return [q, k, v, mask]


def get_init_inputs():
    return []
