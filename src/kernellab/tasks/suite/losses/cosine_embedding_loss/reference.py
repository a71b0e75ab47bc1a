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
    labels = torch.randint(0, 2, (batch_size,)) * 2 - 1
    # Similar pairs (label 1) have a cosine similarity in (1 - hardness, 1], dissimilar ones in
    # [0, hardness), hardness drawn per call (some dissimilar pairs lie above the margin); norms are drawn
    # per row. The loss depends on the labels and differs from call to call.
    hardness = 0.3 + 0.6 * torch.rand(())
    u = torch.rand(batch_size, 1) * hardness
    similarity = torch.where(labels[:, None] > 0, 1.0 - u, u)
    x1 = torch.randn(batch_size, dim)
    x2 = similarity * x1 + (1.0 - similarity.square()).sqrt() * torch.randn(batch_size, dim)
    x1 = x1 * (0.5 + torch.rand(batch_size, 1))
    x2 = x2 * (0.5 + torch.rand(batch_size, 1))
    return [x1, x2, labels]


def get_init_inputs():
    return [margin]
