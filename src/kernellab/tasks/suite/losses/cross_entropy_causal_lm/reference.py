import torch
import torch.nn as nn

batch_size = 4
seq_len = 2048
vocab_size = 32000


class Model(nn.Module):
    """logits: [batch, seq, vocab] from a language model's head; labels: [batch, seq] int64, -100 = ignore.

    The training loss as a model's graph writes it: rows of the flattened logits upcast to float32, the
    mean over the counted tokens, a float32 0-d tensor.
    """

    def __init__(self):
        super().__init__()

    def forward(self, logits, labels):
        flat = logits.view(-1, logits.size(-1)).float()
        return torch.nn.functional.cross_entropy(flat, labels.view(-1), ignore_index=-100)


def get_inputs():
    logits = torch.randn(batch_size, seq_len, vocab_size) * 2.0
    labels = torch.randint(0, vocab_size, (batch_size, seq_len))
    # As from a trained model, the label's logit stands out, by a margin drawn per token whose range is
    # drawn per call: the loss depends on which class is the label, and differs from call to call.
    margin = torch.rand(batch_size, seq_len) * (4.0 + 12.0 * torch.rand(()))
    logits.scatter_add_(2, labels.unsqueeze(2), margin.unsqueeze(2))
    ignored = torch.rand(batch_size, seq_len) < 0.1  # padding and prompt tokens
    ignored[0, 0] = False  # at least one token counts
    labels[ignored] = -100
    return [logits, labels]


def get_init_inputs():
    return []
