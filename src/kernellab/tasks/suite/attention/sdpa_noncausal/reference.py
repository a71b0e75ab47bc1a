"""Bidirectional multi-head attention (encoder / ViT): softmax(q k^T / sqrt(D)) v."""
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

    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v)


def get_inputs():
    return [torch.randn(B, H, L, D), torch.randn(B, H, L, D), torch.randn(B, H, L, D)]


def get_init_inputs():
    return []
