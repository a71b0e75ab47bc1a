"""One Adam step (torch.optim.Adam, L2 weight decay folded into the gradient, bias-corrected at step STEP),
in place on param, exp_avg and exp_avg_sq."""
import math

import torch
import torch.nn as nn

NUMEL = 16777216
LR = 0.001
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-8
WEIGHT_DECAY = 0.01
STEP = 10


class Model(nn.Module):
    def __init__(self, lr, beta1, beta2, eps, weight_decay, step):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.weight_decay, self.step = weight_decay, step

    def forward(self, param, grad, exp_avg, exp_avg_sq):
        g = grad + self.weight_decay * param
        exp_avg.mul_(self.beta1).add_(g, alpha=1 - self.beta1)
        exp_avg_sq.mul_(self.beta2).addcmul_(g, g, value=1 - self.beta2)
        bias_correction1 = 1 - self.beta1 ** self.step
        bias_correction2 = 1 - self.beta2 ** self.step
        denom = exp_avg_sq.sqrt() / math.sqrt(bias_correction2) + self.eps
        param.addcdiv_(exp_avg, denom, value=-self.lr / bias_correction1)


def get_inputs():
    param = torch.randn(NUMEL)
    grad = torch.randn(NUMEL)
    exp_avg = torch.randn(NUMEL) * 0.1
    exp_avg_sq = torch.rand(NUMEL) * 0.01
    return [param, grad, exp_avg, exp_avg_sq]


def get_init_inputs():
    return [LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP]
