"""Causal multi-query attention (PaLM / Falcon / StarCoder): all H query heads share one k and one v head."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 2
H = 32
L = 2048
D = 128


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def get_inputs():
    return [torch.randn(B, H, L, D), torch.randn(B, 1, L, D), torch.randn(B, 1, L, D)]


def get_init_inputs():
    return []
