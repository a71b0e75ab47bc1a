import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 16384
dim = 1024
margin = 0.2


class Model(nn.Module):
    """x1, x2: [batch_size, dim]; labels: [batch_size] int64 in {-1, 1}. Returns a 0-d tensor."""

    def __init__(self, margin):
        super().__init__()
        self.margin = margin

    def forward(self, x1, x2, labels):
        return F.cosine_embedding_loss(x1, x2, labels, margin=self.margin)


def get_inputs():
    x1 = torch.randn(batch_size, dim)
    x2 = torch.randn(batch_size, dim)
    labels = torch.randint(0, 2, (batch_size,)) * 2 - 1
    return [x1, x2, labels]


def get_init_inputs():
    return [margin]
