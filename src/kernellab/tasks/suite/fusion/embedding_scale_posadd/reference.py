"""Token embedding lookup scaled by sqrt(D) plus learned absolute position embeddings
(original Transformer / Gemma-style scaling, GPT-2-style learned positions)."""
import math

import torch
import torch.nn as nn

B = 32
S = 2048
VOCAB = 50257
D = 1024
MAX_POS = 2048


class Model(nn.Module):
    def __init__(self, vocab, dim, max_pos):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_pos, dim)
        self.scale = math.sqrt(dim)

    def forward(self, ids):
        positions = torch.arange(ids.shape[1], device=ids.device)
        return self.tok(ids) * self.scale + self.pos(positions)[None, :, :]


def get_inputs():
    return [torch.randint(0, VOCAB, (B, S))]


def get_init_inputs():
    return [VOCAB, D, MAX_POS]
