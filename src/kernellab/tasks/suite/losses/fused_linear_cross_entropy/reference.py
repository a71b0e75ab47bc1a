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
    # Hidden states share a common direction (as a language model's do), its strength drawn per call:
    # the logits have a common profile over the vocabulary (std about 4 to 8), which the weight shapes.
    hidden = torch.randn(num_tokens, hidden_size) + (4.0 + 4.0 * torch.rand(())) * torch.randn(1, hidden_size)
    # Targets follow a Zipf law (exponent 1.2) over a vocabulary order drawn per call, so the frequent
    # targets' logits weigh in the mean and the loss depends on which they are.
    ranks = (1.0 + torch.rand(num_tokens) * ((vocab_size + 1.0) ** -0.2 - 1.0)) ** -5.0
    targets = (ranks.floor().long().clamp(1, vocab_size) - 1 + torch.randint(0, vocab_size, ())) % vocab_size
    return [hidden, targets]


def get_init_inputs():
    return [hidden_size, vocab_size]
