import torch
import torch.nn as nn
import torch.nn.functional as F

num_embeddings = 1000000
embedding_dim = 128
num_bags = 16384
bag_size = 32


class Model(nn.Module):
    """indices: [num_bags, bag_size] int64. Returns the sum of weight rows per bag: [num_bags, dim]."""

    def __init__(self, num_embeddings, embedding_dim):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(num_embeddings, embedding_dim))

    def forward(self, indices):
        return F.embedding_bag(indices, self.weight, mode="sum")


def get_inputs():
    return [torch.randint(0, num_embeddings, (num_bags, bag_size))]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
