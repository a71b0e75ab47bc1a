"""Sliding-window causal attention (Mistral / Gemma 2 local layers): query i sees keys i - WINDOW < j <= i."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 2
H = 16
L = 4096
D = 64
WINDOW = 1024


class Model(nn.Module):
    def __init__(self, window):
        super().__init__()
        self.window = window

    def forward(self, q, k, v):
        positions = torch.arange(q.shape[2], device=q.device)
        offset = positions[:, None] - positions[None, :]  # i - j
        allowed = (offset >= 0) & (offset < self.window)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)


def get_inputs():
    return [torch.randn(B, H, L, D), torch.randn(B, H, L, D), torch.randn(B, H, L, D)]


def get_init_inputs():
    return [WINDOW]
