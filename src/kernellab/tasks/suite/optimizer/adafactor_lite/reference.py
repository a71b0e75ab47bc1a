"""One Adafactor step on a weight matrix with factored second moments (Shazeer & Stern 2018), no
momentum, no relative step size, update clipping at 1.0, in place on param, row_var and col_var."""
import torch
import torch.nn as nn

ROWS = 4096
COLS = 4096
LR = 0.01
BETA2 = 0.999
EPS = 1e-30
CLIP = 1.0


class Model(nn.Module):
    def __init__(self, lr, beta2, eps, clip):
        super().__init__()
        self.lr, self.beta2, self.eps, self.clip = lr, beta2, eps, clip

    def forward(self, param, grad, row_var, col_var):
        g2 = grad * grad + self.eps
        row_var.lerp_(g2.mean(dim=1), 1 - self.beta2)
        col_var.lerp_(g2.mean(dim=0), 1 - self.beta2)
        v_hat = row_var[:, None] * col_var[None, :] / row_var.mean()
        update = grad / v_hat.sqrt()
        rms = update.square().mean().sqrt()
        update = update / torch.clamp(rms / self.clip, min=1.0)
        param.sub_(self.lr * update)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 0.02, torch.randn(ROWS, COLS), torch.rand(ROWS) + 0.5, torch.rand(COLS) + 0.5]


def get_init_inputs():
    return [LR, BETA2, EPS, CLIP]
