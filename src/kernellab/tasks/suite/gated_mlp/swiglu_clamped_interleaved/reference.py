import torch
import torch.nn as nn

num_tokens = 4096
hidden = 11008
alpha = 1.702
limit = 7.0


class Model(nn.Module):
    """x: [num_tokens, 2 * hidden] with gate at even and linear at odd positions of the last dimension.

    Returns (clamp(linear, -limit, limit) + 1) * g * sigmoid(alpha * g), g = clamp(gate, max=limit).
    """

    def __init__(self, alpha, limit):
        super().__init__()
        self.alpha = alpha
        self.limit = limit

    def forward(self, x):
        gate, linear = x[..., 0::2], x[..., 1::2]
        gate = gate.clamp(max=self.limit)
        linear = linear.clamp(min=-self.limit, max=self.limit)
        return (linear + 1) * (gate * torch.sigmoid(self.alpha * gate))


def get_inputs():
    # Scaled so that a share of the values lies beyond the clamp limit.
    return [torch.randn(num_tokens, 2 * hidden) * 4.0]


def get_init_inputs():
    return [alpha, limit]
