"""One AdamW step over a parameter group of three tensors of different shapes (a weight matrix, its
bias and an embedding table), as torch.optim.AdamW(foreach=True) does it, in place."""
import math

import torch
import torch.nn as nn

HIDDEN = 4096
INTERMEDIATE = 14336
VOCAB = 32000
LR = 0.001
BETA1 = 0.9
BETA2 = 0.95
EPS = 1e-8
WEIGHT_DECAY = 0.1
STEP = 100


class Model(nn.Module):
    def __init__(self, lr, beta1, beta2, eps, weight_decay, step):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.weight_decay, self.step = weight_decay, step

    def _adamw(self, param, grad, exp_avg, exp_avg_sq):
        param.mul_(1 - self.lr * self.weight_decay)
        exp_avg.lerp_(grad, 1 - self.beta1)
        exp_avg_sq.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
        denom = exp_avg_sq.sqrt() / math.sqrt(1 - self.beta2 ** self.step) + self.eps
        param.addcdiv_(exp_avg, denom, value=-self.lr / (1 - self.beta1 ** self.step))

    def forward(self, w, w_grad, w_exp_avg, w_exp_avg_sq, b, b_grad, b_exp_avg, b_exp_avg_sq,
                emb, emb_grad, emb_exp_avg, emb_exp_avg_sq):
        self._adamw(w, w_grad, w_exp_avg, w_exp_avg_sq)
        self._adamw(b, b_grad, b_exp_avg, b_exp_avg_sq)
        self._adamw(emb, emb_grad, emb_exp_avg, emb_exp_avg_sq)


def _state(*shape):
    return [torch.randn(*shape) * 0.02, torch.randn(*shape), torch.randn(*shape) * 0.1, torch.rand(*shape) * 0.01]


def get_inputs():
    return _state(INTERMEDIATE, HIDDEN) + _state(INTERMEDIATE) + _state(VOCAB, HIDDEN)


def get_init_inputs():
    return [LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP]
