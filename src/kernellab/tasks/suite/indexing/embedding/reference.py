import torch
import torch.nn as nn
import torch.nn.functional as F

num_embeddings = 32000
embedding_dim = 4096
batch_size = 4
seq_len = 4096


class Model(nn.Module):
    """input_ids: [batch, seq] int64. Returns weight[input_ids]: [batch, seq, embedding_dim]."""

    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, embedding_dim))

    def forward(self, input_ids):
        return F.embedding(input_ids, self.weight)


def get_inputs():
    return [torch.randint(0, num_embeddings, (batch_size, seq_len))]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
