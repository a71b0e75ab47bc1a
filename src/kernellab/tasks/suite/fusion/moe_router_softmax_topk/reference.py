"""MoE routing from router logits: softmax over experts (in at least float32), top-K experts per token,
weights renormalized to sum to one (Mixtral / Qwen-MoE style)."""
import torch
import torch.nn as nn

T = 16384
E = 64
TOPK = 8


class Model(nn.Module):
    def __init__(self, top_k):
        super().__init__()
        self.top_k = top_k

    def forward(self, logits):
        probs = torch.softmax(logits.to(torch.promote_types(logits.dtype, torch.float32)), dim=-1)
        weights, ids = torch.topk(probs, self.top_k, dim=-1)
        weights = weights / weights.sum(dim=-1, keepdim=True)
        return weights, ids


def get_inputs():
    return [torch.randn(T, E) * 2.0]


def get_init_inputs():
    return [TOPK]
