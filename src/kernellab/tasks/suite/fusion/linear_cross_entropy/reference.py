"""Fused LM head + cross-entropy (Liger / Apple cut-cross-entropy): mean token loss of
softmax(x @ W^T) against integer targets, ignoring targets equal to -100."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M = 4096
HIDDEN = 2048
VOCAB = 32000
IGNORE_INDEX = -100


class Model(nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, x, targets):
        logits = self.lm_head(x).to(torch.promote_types(x.dtype, torch.float32))
        return F.cross_entropy(logits, targets, ignore_index=IGNORE_INDEX)


def get_inputs():
    # Hidden states share a common direction (as a language model's do), its strength drawn per call:
    # the logits have a common profile over the vocabulary (std about 4 to 8), which the weight shapes.
    x = torch.randn(M, HIDDEN) + (7.0 + 7.0 * torch.rand(())) * torch.randn(1, HIDDEN)
    # Targets follow a Zipf law (exponent 1.2) over a vocabulary order drawn per call, so the frequent
    # targets' logits weigh in the mean and the loss depends on which they are.
    ranks = (1.0 + torch.rand(M) * ((VOCAB + 1.0) ** -0.2 - 1.0)) ** -5.0
    targets = (ranks.floor().long().clamp(1, VOCAB) - 1 + torch.randint(0, VOCAB, ())) % VOCAB
    targets = torch.where(torch.rand(M) < 0.05, torch.full_like(targets, IGNORE_INDEX), targets)  # ~5% padding
    targets[0] = 0  # at least one counted token
    return [x, targets]


def get_init_inputs():
    return [HIDDEN, VOCAB]
