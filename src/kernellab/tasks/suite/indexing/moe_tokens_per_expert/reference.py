import torch
import torch.nn as nn

num_tokens = 65536
top_k = 8
num_experts = 128


class Model(nn.Module):
    """expert_ids: [num_tokens, top_k] int64 in [0, num_experts). Returns counts: [num_experts] int64."""

    def __init__(self, num_experts):
        super().__init__()
        self.num_experts = num_experts

    def forward(self, expert_ids):
        flat = expert_ids.reshape(-1)
        counts = torch.zeros(self.num_experts, dtype=torch.int64, device=expert_ids.device)
        return counts.scatter_add(0, flat, torch.ones_like(flat))


def get_inputs():
    # Routing is imbalanced, as a router's is: expert popularity is drawn per call (softmax of normal
    # logits, std 0.5), so the counts differ per expert and per call.
    popularity = torch.softmax(0.5 * torch.randn(num_experts), dim=0)
    ids = torch.searchsorted(torch.cumsum(popularity, dim=0), torch.rand(num_tokens, top_k))
    return [ids.clamp(max=num_experts - 1)]


def get_init_inputs():
    return [num_experts]
