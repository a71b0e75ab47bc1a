"""Causal attention with attention-logit soft-capping (Gemma 2): scores = CAP * tanh(q k^T * SCALE / CAP)."""
import torch
import torch.nn as nn

B = 2
H = 16
L = 2048
D = 256
CAP = 50.0


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        scores = torch.matmul(q, k.transpose(-1, -2)) * (q.shape[-1] ** -0.5)
        scores = CAP * torch.tanh(scores / CAP)
        length = q.shape[2]
        future = torch.ones(length, length, dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(future, float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), v)


def get_inputs():
    scale = 4.0  # spread the logits so that a share of them reaches the saturating part of tanh
    return [torch.randn(B, H, L, D) * scale, torch.randn(B, H, L, D) * scale, torch.randn(B, H, L, D)]


def get_init_inputs():
    return []
