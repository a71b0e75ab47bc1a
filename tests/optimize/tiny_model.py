"""A small Llama-like block written by hand, for the optimize pipeline's CPU test."""

import torch
import torch.nn.functional as F
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return self.weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


class Block(nn.Module):
    def __init__(self, dim=32, hidden=64):
        super().__init__()
        self.norm1, self.norm2 = RMSNorm(dim), RMSNorm(dim)
        self.attn = nn.Linear(dim, dim, bias=False)
        self.gate, self.up = nn.Linear(dim, hidden, bias=False), nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        h = x + self.attn(self.norm1(x))
        return h + self.down(F.silu(self.gate(self.norm2(h))) * self.up(self.norm2(h)))


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])
        self.norm = RMSNorm(32)

    def forward(self, x):
        for b in self.blocks:
            x = b(x)
        return self.norm(x)


def factory():
    return Tiny()


def make_inputs(sizes, device, dtype):
    return [torch.randn(sizes["B"], sizes["S"], 32, device=device, dtype=dtype)]


def loss(output, x):
    """Training loss (the mean square of an RMS-normalised output would be ~1 whatever the weights)."""
    return (output.float() * x.float()).mean()
