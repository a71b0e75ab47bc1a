import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8
num_classes = 19
height = 512
width = 512


class Model(nn.Module):
    """logits: [batch, num_classes, height, width]; targets: [batch, height, width] int64, 255 = ignore."""

    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets, ignore_index=255)


def get_inputs():
    logits = torch.randn(batch_size, num_classes, height, width) * 2.0
    targets = torch.randint(0, num_classes, (batch_size, height, width))
    # As from a trained model, the target class's logit stands out, by a margin drawn per pixel whose
    # range is drawn per call: the loss depends on the targets, and differs from call to call.
    margin = torch.rand(batch_size, 1, height, width) * (3.0 + 9.0 * torch.rand(()))
    logits.scatter_add_(1, targets.unsqueeze(1), margin)
    ignored = torch.rand(batch_size, height, width) < 0.1
    ignored[0, 0, 0] = False  # at least one pixel counts
    targets[ignored] = 255
    return [logits, targets]


def get_init_inputs():
    return []
