"""Dense 1-D convolution, kernel 3, padding 1, with bias followed by GELU (Whisper audio front-end)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 16
C_IN = 80
C_OUT = 1024
L = 3000


class Model(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv1d(c_in, c_out, kernel_size=3, padding=1, bias=True)

    def forward(self, x):
        return F.gelu(self.conv(x))


def get_inputs():
    return [torch.randn(B, C_IN, L)]


def get_init_inputs():
    return [C_IN, C_OUT]
