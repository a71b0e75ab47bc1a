import torch
import torch.nn as nn

num_tokens = 32768
num_experts = 64
top_k = 6


class Model(nn.Module):
    """router_logits: [num_tokens, num_experts].

    Returns (weights [num_tokens, top_k], expert ids [num_tokens, top_k] int64), weights renormalised.
    """

    def __init__(self, top_k):
        super().__init__()
        self.top_k = top_k

    def forward(self, router_logits):
        probs = torch.softmax(router_logits, dim=-1)
        weights, ids = torch.topk(probs, self.top_k, dim=-1)
        return weights / weights.sum(dim=-1, keepdim=True), ids


def get_inputs():
    return [torch.randn(num_tokens, num_experts)]


def get_init_inputs():
    return [top_k]
