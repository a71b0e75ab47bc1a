import torch
import torch.nn as nn

batch_size = 1
num_heads = 32
seq_len = 1024
head_dim = 128


class Model(nn.Module):
    """scores: [batch, heads, seq, seq]. Returns softmax(scores * scale) with key j > query i masked."""

    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, scores):
        seq = scores.shape[-1]
        future = torch.ones(seq, seq, dtype=torch.bool, device=scores.device).triu(1)
        return torch.softmax((scores * self.scale).masked_fill(future, float("-inf")), dim=-1)


def get_inputs():
    return [torch.randn(batch_size, num_heads, seq_len, seq_len) * 8.0]


def get_init_inputs():
    return [head_dim ** -0.5]
