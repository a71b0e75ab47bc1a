"""ALiBi attention scores as in BLOOM: scores = baddbmm(alibi, q, k^T, beta=1, alpha=1/sqrt(D)).

q, k: (BH, L, D) with batch and heads flattened; alibi: (BH, 1, L) per-head linear position bias,
broadcast over query rows.
"""
import math

import torch
import torch.nn as nn

BH = 64
L = 2048
D = 128
HEADS = 32


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, alibi, q, k):
        return torch.baddbmm(alibi, q, k.transpose(1, 2), beta=1.0, alpha=1.0 / math.sqrt(q.shape[-1]))


def get_inputs():
    heads = min(HEADS, BH)
    slopes = 2.0 ** (-8.0 * torch.arange(1, heads + 1) / heads)
    slopes = slopes.repeat((BH + heads - 1) // heads)[:BH]
    alibi = slopes[:, None, None] * torch.arange(L)[None, None, :]
    return [alibi, torch.randn(BH, L, D), torch.randn(BH, L, D)]


def get_init_inputs():
    return []
