import torch
import torch.nn as nn

num_tokens = 4096
top_k = 8
hidden = 2048


class Model(nn.Module):
    """expert_out: [num_tokens * top_k, hidden]; row_index: [num_tokens, top_k] int64 (a permutation);
    weights: [num_tokens, top_k]. Returns sum_j weights[t, j] * expert_out[row_index[t, j]].
    """

    def __init__(self):
        super().__init__()

    def forward(self, expert_out, row_index, weights):
        gathered = expert_out[row_index]  # [num_tokens, top_k, hidden]
        return (gathered * weights.unsqueeze(-1)).sum(dim=1)


def get_inputs():
    expert_out = torch.randn(num_tokens * top_k, hidden)
    row_index = torch.randperm(num_tokens * top_k).reshape(num_tokens, top_k)
    weights = torch.rand(num_tokens, top_k)
    return [expert_out, row_index, weights]


def get_init_inputs():
    return []
