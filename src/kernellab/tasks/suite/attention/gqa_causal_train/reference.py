"""Causal grouped-query attention in a training step (Llama-3): H query heads share HKV key/value heads;
forward and backward."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 1
H = 32
HKV = 8
L = 4096
D = 128


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def get_inputs():
    return [torch.randn(B, H, L, D), torch.randn(B, HKV, L, D), torch.randn(B, HKV, L, D)]


def get_init_inputs():
    return []
