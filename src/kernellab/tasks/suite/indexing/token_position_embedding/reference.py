import torch
import torch.nn as nn
import torch.nn.functional as F

vocab_size = 50257
dim = 1024
batch_size = 16
seq_len = 2048


class Model(nn.Module):
    """input_ids: [batch, seq] int64. Returns wte[input_ids] + wpe[0..seq-1]: [batch, seq, dim]."""

    def __init__(self, vocab_size, max_positions, dim):
        super().__init__()
        self.wte = nn.Parameter(torch.randn(vocab_size, dim) * 0.02)
        self.wpe = nn.Parameter(torch.randn(max_positions, dim) * 0.01)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        return F.embedding(input_ids, self.wte) + F.embedding(positions, self.wpe)


def get_inputs():
    return [torch.randint(0, vocab_size, (batch_size, seq_len))]


def get_init_inputs():
    return [vocab_size, seq_len, dim]
