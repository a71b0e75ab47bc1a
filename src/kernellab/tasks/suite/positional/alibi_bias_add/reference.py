import math

import torch
import torch.nn as nn

batch_size = 4
num_heads = 16
seq_len = 1024


def alibi_slopes(num_heads):
    closest = 2 ** math.floor(math.log2(num_heads))
    base = 2.0 ** (-8.0 / closest)
    slopes = [base ** (i + 1) for i in range(closest)]
    if closest < num_heads:
        extra = 2.0 ** (-4.0 / closest)
        slopes += [extra ** (2 * i + 1) for i in range(num_heads - closest)]
    return slopes


class Model(nn.Module):
    """scores: [batch, heads, seq, seq]. Returns scores + slope[h] * (j - i), in the dtype of scores.

    The bias is formed in at least float32.
    """

    def __init__(self):
        super().__init__()

    def forward(self, scores):
        heads, seq = scores.shape[1], scores.shape[-1]
        work = torch.promote_types(scores.dtype, torch.float32)
        slopes = torch.tensor(alibi_slopes(heads), dtype=work, device=scores.device)
        pos = torch.arange(seq, dtype=work, device=scores.device)
        distance = pos[None, :] - pos[:, None]  # j - i
        bias = slopes[:, None, None] * distance[None, :, :]
        return (scores.to(work) + bias).to(scores.dtype)


def get_inputs():
    # Attention scores with a spread drawn per call (std 4 to 12), so that they are not lost next to the
    # bias, which grows with the distance (to hundreds at long sequences).
    return [torch.randn(batch_size, num_heads, seq_len, seq_len) * (4.0 + 8.0 * torch.rand(()))]


def get_init_inputs():
    return []
