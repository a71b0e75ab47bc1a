import torch
import torch.nn as nn

batch_size = 16
num_heads = 16
seq_len = 512


class Model(nn.Module):
    """scores: [batch, heads, seq, seq]; mask: [batch, 1, 1, seq] bool, True = key takes part.

    Returns softmax over the last dimension of scores with masked-out keys at -inf (probability 0).
    """

    def __init__(self):
        super().__init__()

    def forward(self, scores, mask):
        return torch.softmax(scores.masked_fill(~mask, float("-inf")), dim=-1)


def get_inputs():
    scores = torch.randn(batch_size, num_heads, seq_len, seq_len)
    mask = torch.rand(batch_size, 1, 1, seq_len) > 0.2
    mask[..., 0] = True  # every row keeps at least one key
    return [scores, mask]


def get_init_inputs():
    return []
