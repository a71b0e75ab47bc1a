"""Causal attention with ALiBi position biases (BLOOM, MPT): score(i, j) = q_i . k_j / sqrt(D) + m_h (j - i).

The per-head slopes (initially m_h = 2^(-8 (h + 1) / H)) are a float32 buffer of the module.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 2
H = 32
L = 2048
D = 128


class Model(nn.Module):
    def __init__(self, heads):
        super().__init__()
        self.register_buffer("slopes", 2.0 ** (-8.0 * torch.arange(1, heads + 1) / heads))

    def forward(self, q, k, v):
        positions = torch.arange(q.shape[2], device=q.device)
        distance = (positions[None, :] - positions[:, None]).to(self.slopes.dtype)  # j - i, exact in fp32
        bias = self.slopes[:, None, None] * distance  # (H, L, L)
        bias = bias.masked_fill(positions[None, :] > positions[:, None], float("-inf"))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.to(q.dtype))


def get_inputs():
    return [torch.randn(B, H, L, D), torch.randn(B, H, L, D), torch.randn(B, H, L, D)]


def get_init_inputs():
    return [H]
