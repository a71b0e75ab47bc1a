"""One LSTM cell step (torch.nn.LSTMCell gate order i, f, g, o): two GEMMs and a gate epilogue."""
import torch
import torch.nn as nn

B = 4096
INPUT = 2048
HIDDEN = 2048


class Model(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.ih = nn.Linear(input_size, 4 * hidden_size)
        self.hh = nn.Linear(hidden_size, 4 * hidden_size)

    def forward(self, x, h, c):
        gates = self.ih(x) + self.hh(h)
        i, f, g, o = gates.chunk(4, dim=1)
        c_next = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h_next = torch.sigmoid(o) * torch.tanh(c_next)
        return h_next, c_next


def get_inputs():
    return [torch.randn(B, INPUT), torch.randn(B, HIDDEN), torch.randn(B, HIDDEN)]


def get_init_inputs():
    return [INPUT, HIDDEN]
