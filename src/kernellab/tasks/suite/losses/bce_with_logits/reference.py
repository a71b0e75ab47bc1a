import torch
import torch.nn as nn
import torch.nn.functional as F

batch_size = 8192
num_labels = 4096


class Model(nn.Module):
    """logits, targets: [batch_size, num_labels], targets in [0, 1]. Returns a 0-d tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.binary_cross_entropy_with_logits(logits, targets)


def get_inputs():
    # Soft targets and logits that track them, as from a trained model: how sharply and how noisily
    # are drawn per call, so the loss depends on the targets and differs from call to call.
    targets = torch.rand(batch_size, num_labels)
    sharpness = 0.5 + 2.0 * torch.rand(())
    noise = 0.5 + 2.5 * torch.rand(())
    logits = torch.logit(targets, eps=1e-3) * sharpness + torch.randn(batch_size, num_labels) * noise
    return [logits, targets]


def get_init_inputs():
    return []
