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
    logits = torch.randn(num_tokens, num_classes) * 2.0
    targets = torch.randint(0, num_classes, (num_tokens,))
    # As from a trained model, the target's logit stands out, by a margin drawn per token whose range is
    # drawn per call: the loss depends on which class is the target, and differs from call to call.
    logits[torch.arange(num_tokens), targets] += torch.rand(num_tokens) * (4.0 + 12.0 * torch.rand(()))
    log_probs = torch.log_softmax(logits, dim=-1)
    return [log_probs, targets]


def get_init_inputs():
    return []
