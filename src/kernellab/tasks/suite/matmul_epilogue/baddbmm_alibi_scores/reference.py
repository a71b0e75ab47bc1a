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
    batch = (BH + heads - 1) // heads
    slopes = 2.0 ** (-8.0 * torch.arange(1, heads + 1) / heads)
    slopes = slopes.repeat(batch)[:BH]
    # BLOOM's alibi: positions count from each sequence's first real token, after a left padding drawn
    # per sequence (up to L/4), and are 0 on the padding.
    pad = (torch.rand(batch) * (L // 4 + 1)).floor()
    positions = (torch.arange(L)[None, :] - pad[:, None]).clamp(min=0).repeat_interleave(heads, dim=0)[:BH]
    alibi = slopes[:, None, None] * positions[:, None, :]
    # q and k with a spread drawn per call (scores of std 2 to 6), so the scores are not lost next to
    # the bias, which grows with the position.
    scale = (2.0 + 4.0 * torch.rand(())).sqrt()
    return [alibi, torch.randn(BH, L, D) * scale, torch.randn(BH, L, D) * scale]


def get_init_inputs():
    return []
