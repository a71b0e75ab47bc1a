"""Final-logit soft-capping followed by a softmax over the vocabulary (Gemma 2 sampling probabilities):
p = softmax(CAP * tanh(logits / CAP))."""
import torch
import torch.nn as nn

M = 512
V = 256000
CAP = 30.0


class Model(nn.Module):
    def __init__(self, cap):
        super().__init__()
        self.cap = cap

    def forward(self, logits):
        x = logits.to(torch.promote_types(logits.dtype, torch.float32))
        return torch.softmax(self.cap * torch.tanh(x / self.cap), dim=-1).to(logits.dtype)


def get_inputs():
    return [torch.randn(M, V) * 10.0]


def get_init_inputs():
    return [CAP]
