"""One SGD step with weight decay, in place: p <- p - lr * (g + weight_decay * p)  (torch.optim.SGD)."""
import torch
import torch.nn as nn

NUMEL = 16777216
LR = 0.01
WEIGHT_DECAY = 0.01


class Model(nn.Module):
    def __init__(self, lr, weight_decay):
        super().__init__()
        self.lr = lr
        self.weight_decay = weight_decay

    def forward(self, param, grad):
        param.add_(grad + self.weight_decay * param, alpha=-self.lr)


def get_inputs():
    return [torch.randn(NUMEL), torch.randn(NUMEL)]


def get_init_inputs():
    return [LR, WEIGHT_DECAY]
