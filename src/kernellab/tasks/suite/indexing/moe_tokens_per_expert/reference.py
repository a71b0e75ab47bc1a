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
    return [torch.randint(0, num_experts, (num_tokens, top_k))]


def get_init_inputs():
    return [num_experts]
