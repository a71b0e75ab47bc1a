"""Post-LN transformer (BERT) attention output: y = LayerNorm(residual + attn @ W_o^T + b_o)."""
import torch
import torch.nn as nn

M = 16384
HIDDEN = 1024
EPS = 1e-12


class Model(nn.Module):
    def __init__(self, hidden, eps):
        super().__init__()
        self.dense = nn.Linear(hidden, hidden)
        self.norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, attn, residual):
        return self.norm(residual + self.dense(attn))


def get_inputs():
    return [torch.randn(M, HIDDEN), torch.randn(M, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, EPS]
