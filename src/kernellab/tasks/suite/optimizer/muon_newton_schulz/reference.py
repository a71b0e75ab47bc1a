"""One Muon step (Jordan et al. 2024) on a weight matrix: Nesterov momentum, then the update is
orthogonalized by five quintic Newton-Schulz iterations, then applied with a shape-dependent scale.

    momentum_buffer = lerp(momentum_buffer, grad, 1 - MOMENTUM)
    g = lerp(grad, momentum_buffer, MOMENTUM)                        (Nesterov)
    X = g / (||g||_F + 1e-7), transposed if ROWS > COLS
    5 x:  A = X X^T;  B = b A + c A A;  X = a X + B X                (a, b, c = 3.4445, -4.7750, 2.0315)
    param -= LR * max(1, ROWS / COLS) ** 0.5 * X (transposed back)
"""
import torch
import torch.nn as nn

ROWS = 1024
COLS = 4096
LR = 0.02
MOMENTUM = 0.95


class Model(nn.Module):
    def __init__(self, lr, momentum):
        super().__init__()
        self.lr, self.momentum = lr, momentum

    def forward(self, param, grad, momentum_buffer):
        momentum_buffer.lerp_(grad, 1 - self.momentum)
        g = torch.lerp(grad, momentum_buffer, self.momentum)
        a, b, c = 3.4445, -4.7750, 2.0315
        x = g / (torch.linalg.matrix_norm(g) + 1e-7)
        tall = g.shape[0] > g.shape[1]
        if tall:
            x = x.t()
        for _ in range(5):
            A = x @ x.t()
            B = b * A + c * (A @ A)
            x = a * x + B @ x
        if tall:
            x = x.t()
        param.add_(x, alpha=-self.lr * max(1.0, param.shape[0] / param.shape[1]) ** 0.5)


def get_inputs():
    return [torch.randn(ROWS, COLS) * 0.02, torch.randn(ROWS, COLS), torch.randn(ROWS, COLS) * 0.1]


def get_init_inputs():
    return [LR, MOMENTUM]
