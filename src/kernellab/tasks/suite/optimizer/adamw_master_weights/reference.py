"""Mixed-precision AdamW step: low-precision model weights and gradients, float32 master weights and
moments. The master copy takes the AdamW step; the model weight is overwritten with its rounding."""
import math

import torch
import torch.nn as nn

NUMEL = 16777216
LR = 0.0003
BETA1 = 0.9
BETA2 = 0.95
EPS = 1e-8
WEIGHT_DECAY = 0.1
STEP = 1000


class Model(nn.Module):
    def __init__(self, lr, beta1, beta2, eps, weight_decay, step):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.weight_decay, self.step = weight_decay, step

    def forward(self, param, grad, master, exp_avg, exp_avg_sq):
        g = grad.to(master.dtype)
        master.mul_(1 - self.lr * self.weight_decay)
        exp_avg.lerp_(g, 1 - self.beta1)
        exp_avg_sq.mul_(self.beta2).addcmul_(g, g, value=1 - self.beta2)
        bias_correction1 = 1 - self.beta1 ** self.step
        bias_correction2 = 1 - self.beta2 ** self.step
        denom = exp_avg_sq.sqrt() / math.sqrt(bias_correction2) + self.eps
        master.addcdiv_(exp_avg, denom, value=-self.lr / bias_correction1)
        param.copy_(master)


def get_inputs():
    master = torch.randn(NUMEL)
    param = master.clone()
    grad = torch.randn(NUMEL)
    exp_avg = torch.randn(NUMEL) * 0.1
    exp_avg_sq = torch.rand(NUMEL) * 0.01
    return [param, grad, master, exp_avg, exp_avg_sq]


def get_init_inputs():
    return [LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP]
