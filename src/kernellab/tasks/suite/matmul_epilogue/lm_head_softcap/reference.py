"""LM head with final-logit soft-capping (Gemma 2): logits = CAP * tanh((x @ W^T) / CAP)."""
import torch
import torch.nn as nn

M = 2048
HIDDEN = 2304
VOCAB = 65536
CAP = 30.0


class Model(nn.Module):
    def __init__(self, hidden, vocab):
        super().__init__()
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, x):
        return CAP * torch.tanh(self.lm_head(x) / CAP)


def get_inputs():
    return [torch.randn(M, HIDDEN) * 32.0]


def get_init_inputs():
    return [HIDDEN, VOCAB]
