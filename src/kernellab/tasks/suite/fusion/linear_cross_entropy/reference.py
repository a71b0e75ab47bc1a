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
    x = torch.randn(M, HIDDEN)
    targets = torch.randint(0, VOCAB, (M,))
    targets = torch.where(torch.rand(M) < 0.05, torch.full_like(targets, IGNORE_INDEX), targets)  # ~5% padding
    targets[0] = 0  # at least one counted token
    return [x, targets]


def get_init_inputs():
    return [HIDDEN, VOCAB]
