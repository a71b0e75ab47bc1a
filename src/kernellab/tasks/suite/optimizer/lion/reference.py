"""One Lion step (Chen et al. 2023), in place:
    update = sign(b1 * exp_avg + (1 - b1) * grad)
    param  = param * (1 - lr * wd) - lr * update
    exp_avg = b2 * exp_avg + (1 - b2) * grad
"""
import torch
import torch.nn as nn

NUMEL = 16777216
LR = 0.0001
BETA1 = 0.9
BETA2 = 0.99
WEIGHT_DECAY = 0.1


class Model(nn.Module):
    def __init__(self, lr, beta1, beta2, weight_decay):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.weight_decay = lr, beta1, beta2, weight_decay

    def forward(self, param, grad, exp_avg):
        update = torch.sign(exp_avg * self.beta1 + grad * (1 - self.beta1))
        param.mul_(1 - self.lr * self.weight_decay).add_(update, alpha=-self.lr)
        exp_avg.lerp_(grad, 1 - self.beta2)


def get_inputs():
    # The sign's argument is kept at least 2e-3 away from zero: where it is within rounding of zero,
    # an FMA or another order of the two products flips the sign and moves that element by 2 * lr,
    # which no tolerance of a float32 step can tell from a wrong update (16M elements hold a few).
    param, grad, exp_avg = torch.randn(NUMEL), torch.randn(NUMEL), torch.randn(NUMEL) * 0.1
    mixed = exp_avg * BETA1 + grad * (1 - BETA1)
    side = torch.where(mixed >= 0, 1.0, -1.0)
    grad = torch.where(mixed.abs() < 1e-3, grad + side * 0.02, grad)
    return [param, grad, exp_avg]


def get_init_inputs():
    return [LR, BETA1, BETA2, WEIGHT_DECAY]
