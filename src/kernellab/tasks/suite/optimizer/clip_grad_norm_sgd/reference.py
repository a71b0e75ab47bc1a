"""Global gradient-norm clipping over two parameter tensors followed by an SGD step (what
torch.nn.utils.clip_grad_norm_ and optimizer.step() do together). Gradients are clipped in place."""
import torch
import torch.nn as nn

ROWS = 4096
COLS = 4096
LR = 0.1
MAX_NORM = 1.0


class Model(nn.Module):
    def __init__(self, lr, max_norm):
        super().__init__()
        self.lr, self.max_norm = lr, max_norm

    def forward(self, weight, weight_grad, bias, bias_grad):
        total_norm = torch.linalg.vector_norm(
            torch.stack([torch.linalg.vector_norm(weight_grad), torch.linalg.vector_norm(bias_grad)]))
        clip_coef = torch.clamp(self.max_norm / (total_norm + 1e-6), max=1.0)
        weight_grad.mul_(clip_coef)
        bias_grad.mul_(clip_coef)
        weight.add_(weight_grad, alpha=-self.lr)
        bias.add_(bias_grad, alpha=-self.lr)


def get_inputs():
    # gradient norm drawn around [0, 2] x MAX_NORM: about half of the calls clip, half do not
    grad_scale = torch.rand(()) * 2.0 / (ROWS * COLS + ROWS) ** 0.5
    return [torch.randn(ROWS, COLS) * 0.02, torch.randn(ROWS, COLS) * grad_scale, torch.randn(ROWS) * 0.02,
            torch.randn(ROWS) * grad_scale]


def get_init_inputs():
    return [LR, MAX_NORM]
