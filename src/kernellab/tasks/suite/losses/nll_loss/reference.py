import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 65536
num_classes = 256


class Model(nn.Module):
    """log_probs: [num_tokens, num_classes]; targets: [num_tokens] int64. Returns a 0-d tensor."""

    def __init__(self):
        super().__init__()

    def forward(self, log_probs, targets):
        return F.nll_loss(log_probs, targets)


def get_inputs():
    log_probs = torch.log_softmax(torch.randn(num_tokens, num_classes) * 2.0, dim=-1)
    targets = torch.randint(0, num_classes, (num_tokens,))
    return [log_probs, targets]


def get_init_inputs():
    return []
