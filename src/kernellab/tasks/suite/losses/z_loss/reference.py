import torch
import torch.nn as nn

num_tokens = 4096
vocab_size = 32000
z_loss_weight = 1e-4


class Model(nn.Module):
    """logits: [num_tokens, vocab_size]. Returns weight * mean(logsumexp(logits, -1) ** 2)."""

    def __init__(self, weight):
        super().__init__()
        self.weight = weight

    def forward(self, logits):
        return self.weight * torch.logsumexp(logits, dim=-1).square().mean()


def get_inputs():
    # Logits whose spread and offset (what the z-loss penalises) are drawn per call, offsets also per token.
    scale = 1.0 + 2.0 * torch.rand(())
    shift = 8.0 * torch.rand(()) - 4.0 + torch.randn(num_tokens, 1)
    return [torch.randn(num_tokens, vocab_size) * scale + shift]


def get_init_inputs():
    return [z_loss_weight]
