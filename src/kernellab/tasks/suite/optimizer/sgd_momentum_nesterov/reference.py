"""One SGD step with weight decay and Nesterov momentum, in place (torch.optim.SGD, dampening 0,
an existing momentum buffer):
    g   = grad + weight_decay * param
    buf = momentum * buf + g
    param <- param - lr * (g + momentum * buf)
"""
import torch
import torch.nn as nn

NUMEL = 16777216
LR = 0.01
MOMENTUM = 0.9
WEIGHT_DECAY = 0.0005


class Model(nn.Module):
    def __init__(self, lr, momentum, weight_decay):
        super().__init__()
        self.lr = lr
        self.momentum = momentum
        self.weight_decay = weight_decay

    def forward(self, param, grad, momentum_buffer):
        g = grad + self.weight_decay * param
        momentum_buffer.mul_(self.momentum).add_(g)
        param.add_(g + self.momentum * momentum_buffer, alpha=-self.lr)


def get_inputs():
    return [torch.randn(NUMEL), torch.randn(NUMEL), torch.randn(NUMEL)]


def get_init_inputs():
    return [LR, MOMENTUM, WEIGHT_DECAY]
