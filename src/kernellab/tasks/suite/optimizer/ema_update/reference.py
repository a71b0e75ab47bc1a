"""Exponential moving average of model weights (EMA / Polyak averaging), in place:
ema <- decay * ema + (1 - decay) * param."""
import torch
import torch.nn as nn

NUMEL = 16777216
DECAY = 0.999


class Model(nn.Module):
    def __init__(self, decay):
        super().__init__()
        self.decay = decay

    def forward(self, ema, param):
        ema.lerp_(param, 1 - self.decay)


def get_inputs():
    param = torch.randn(NUMEL)
    ema = param + torch.randn(NUMEL) * 0.1
    return [ema, param]


def get_init_inputs():
    return [DECAY]
