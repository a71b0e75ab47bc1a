"""One RMSprop step with momentum (torch.optim.RMSprop, not centered), in place."""
import torch
import torch.nn as nn

NUMEL = 16777216
LR = 0.001
ALPHA = 0.99
EPS = 1e-8
MOMENTUM = 0.9


class Model(nn.Module):
    def __init__(self, lr, alpha, eps, momentum):
        super().__init__()
        self.lr, self.alpha, self.eps, self.momentum = lr, alpha, eps, momentum

    def forward(self, param, grad, square_avg, momentum_buffer):
        square_avg.mul_(self.alpha).addcmul_(grad, grad, value=1 - self.alpha)
        avg = square_avg.sqrt().add_(self.eps)
        momentum_buffer.mul_(self.momentum).addcdiv_(grad, avg)
        param.add_(momentum_buffer, alpha=-self.lr)


def get_inputs():
    return [torch.randn(NUMEL), torch.randn(NUMEL), torch.rand(NUMEL), torch.randn(NUMEL) * 0.1]


def get_init_inputs():
    return [LR, ALPHA, EPS, MOMENTUM]
