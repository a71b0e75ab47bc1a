import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 4096
vocab_size = 32000


class Model(nn.Module):
    """logits: [num_tokens, vocab_size]; targets: [num_tokens] int64.

    Label smoothing 0.1; returns the mean, a 0-d tensor.
    """

    def __init__(self):
        super().__init__()

    def forward(self, logits, targets):
        return F.cross_entropy(logits, targets, label_smoothing=0.1)


def get_inputs():
    logits = torch.randn(num_tokens, vocab_size) * 2.0
    targets = torch.randint(0, vocab_size, (num_tokens,))
    # As from a trained model, the target's logit stands out, by a margin drawn per token whose range is
    # drawn per call: the loss depends on which class is the target, and differs from call to call.
    margin = torch.rand(num_tokens) * (4.0 + 12.0 * torch.rand(()))
    logits[torch.arange(num_tokens), targets] += margin
    return [logits, targets]


def get_init_inputs():
    return []
