"""One Adagrad step (torch.optim.Adagrad, no lr decay, L2 weight decay), in place on param and state_sum."""
import torch
import torch.nn as nn

NUMEL = 16777216
LR = 0.01
EPS = 1e-10
WEIGHT_DECAY = 0.0001


class Model(nn.Module):
    def __init__(self, lr, eps, weight_decay):
        super().__init__()
        self.lr, self.eps, self.weight_decay = lr, eps, weight_decay

    def forward(self, param, grad, state_sum):
        g = grad + self.weight_decay * param
        state_sum.addcmul_(g, g, value=1.0)
        param.addcdiv_(g, state_sum.sqrt() + self.eps, value=-self.lr)


def get_inputs():
    return [torch.randn(NUMEL), torch.randn(NUMEL), torch.rand(NUMEL) * 10.0]


def get_init_inputs():
    return [LR, EPS, WEIGHT_DECAY]
