"""One SGD-with-momentum step, in place: buf = momentum * buf + grad; param -= lr * buf.

``param`` and ``momentum_buf`` are updated in place (declared in ``mutates``); ``grad`` is read only.
The updated ``param`` is also returned.
"""

import torch
import torch.nn as nn

P = 16777216  # parameters
lr = 0.01
momentum = 0.9


class Model(nn.Module):
    def __init__(self, lr: float, momentum: float):
        super().__init__()
        self.lr = lr
        self.momentum = momentum

    def forward(self, param: torch.Tensor, grad: torch.Tensor, momentum_buf: torch.Tensor) -> torch.Tensor:
        momentum_buf.mul_(self.momentum).add_(grad)
        param.add_(momentum_buf, alpha=-self.lr)
        return param


def get_inputs():
    return [torch.randn(P), torch.randn(P), torch.randn(P)]


def get_init_inputs():
    return [lr, momentum]
