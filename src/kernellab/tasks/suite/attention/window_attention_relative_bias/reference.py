"""Swin window attention: attention inside WINDOW x WINDOW patches of tokens with a learned relative
position bias gathered from a ((2W-1)^2, H) table by a fixed index."""
import torch
import torch.nn as nn
import torch.nn.functional as F

NW = 4096
H = 3
WINDOW = 7
D = 32


class Model(nn.Module):
    def __init__(self, window, heads):
        super().__init__()
        self.window = window
        self.bias_table = nn.Parameter(torch.randn((2 * window - 1) ** 2, heads))  # a trained table's scale
        coords = torch.stack(torch.meshgrid(torch.arange(window), torch.arange(window), indexing="ij")).flatten(1)
        relative = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0) + (window - 1)
        self.register_buffer("bias_index", relative[..., 0] * (2 * window - 1) + relative[..., 1])

    def forward(self, q, k, v):
        n = self.window * self.window
        bias = self.bias_table[self.bias_index.reshape(-1)].reshape(n, n, -1).permute(2, 0, 1)  # (H, N, N)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=bias.unsqueeze(0))


def get_inputs():
    n = WINDOW * WINDOW
    return [torch.randn(NW, H, n, D), torch.randn(NW, H, n, D), torch.randn(NW, H, n, D)]


def get_init_inputs():
    return [WINDOW, H]
