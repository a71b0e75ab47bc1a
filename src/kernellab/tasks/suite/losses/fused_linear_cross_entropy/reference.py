import torch
import torch.nn as nn
import torch.nn.functional as F

num_tokens = 512
hidden_size = 2048
vocab_size = 32000


class Model(nn.Module):
    """hidden: [num_tokens, hidden_size]; targets: [num_tokens] int64; weight: [vocab_size, hidden_size].

    Returns cross_entropy(hidden @ weight.T, targets), a 0-d tensor.
    """

    def __init__(self, hidden_size, vocab_size):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab_size, hidden_size) * hidden_size ** -0.5)

    def forward(self, hidden, targets):
        return F.cross_entropy(F.linear(hidden, self.weight), targets)


def get_inputs():
    hidden = torch.randn(num_tokens, hidden_size)
    targets = torch.randint(0, vocab_size, (num_tokens,))
    return [hidden, targets]


def get_init_inputs():
    return [hidden_size, vocab_size]
