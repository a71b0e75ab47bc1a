"""One LAMB step on a single weight matrix (layer-wise trust ratio), in place:
    m, v as in Adam (bias-corrected at step STEP); u = m_hat / (sqrt(v_hat) + eps) + wd * param
    trust = ||param|| / ||u|| (1 when either norm is zero);  param -= lr * trust * u
"""
import torch
import torch.nn as nn

ROWS = 4096
COLS = 4096
LR = 0.002
BETA1 = 0.9
BETA2 = 0.999
EPS = 1e-6
WEIGHT_DECAY = 0.01
STEP = 50


class Model(nn.Module):
    def __init__(self, lr, beta1, beta2, eps, weight_decay, step):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.weight_decay, self.step = weight_decay, step

    def forward(self, param, grad, exp_avg, exp_avg_sq):
        exp_avg.lerp_(grad, 1 - self.beta1)
        exp_avg_sq.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
        m_hat = exp_avg / (1 - self.beta1 ** self.step)
        v_hat = exp_avg_sq / (1 - self.beta2 ** self.step)
        update = m_hat / (v_hat.sqrt() + self.eps) + self.weight_decay * param
        w_norm = torch.linalg.vector_norm(param)
        u_norm = torch.linalg.vector_norm(update)
        trust = torch.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, torch.ones_like(w_norm))
        param.sub_(self.lr * trust * update)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 0.02, torch.randn(ROWS, COLS), torch.randn(ROWS, COLS) * 0.1,
            torch.rand(ROWS, COLS) * 0.01]


def get_init_inputs():
    return [LR, BETA1, BETA2, EPS, WEIGHT_DECAY, STEP]
