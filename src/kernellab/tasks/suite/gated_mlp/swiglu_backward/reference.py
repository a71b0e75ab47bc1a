import torch
import torch.nn as nn

num_tokens = 4096
hidden = 11008


class Model(nn.Module):
    """Backward of silu(gate) * up.

    x = [gate | up]: [num_tokens, 2 * hidden]; grad_output: [num_tokens, hidden].
    Returns the gradient with respect to x, [d_gate | d_up]: [num_tokens, 2 * hidden].
    """

    def __init__(self):
        super().__init__()

    def forward(self, x, grad_output):
        gate, up = x.chunk(2, dim=-1)
        sig = torch.sigmoid(gate)
        d_gate = grad_output * up * sig * (1 + gate * (1 - sig))
        d_up = grad_output * gate * sig
        return torch.cat([d_gate, d_up], dim=-1)


def get_inputs():
    return [torch.randn(num_tokens, 2 * hidden), torch.randn(num_tokens, hidden)]


def get_init_inputs():
    return []
