"""A whole Llama MLP sub-block: out = x + down(silu(gate(n)) * up(n)) with n = RMSNorm(x)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

M = 4096
HIDDEN = 4096
INTERMEDIATE = 14336
EPS = 1e-5


class Model(nn.Module):
    def __init__(self, hidden, intermediate, eps):
        super().__init__()
        self.norm_weight = nn.Parameter(torch.ones(hidden))
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False)
        self.down_proj = nn.Linear(intermediate, hidden, bias=False)
        self.eps = eps

    def forward(self, x):
        xf = x.to(torch.promote_types(x.dtype, torch.float32))  # norm statistics in at least float32
        n = (xf * torch.rsqrt(xf.square().mean(dim=-1, keepdim=True) + self.eps)).to(x.dtype) * self.norm_weight
        return x + self.down_proj(F.silu(self.gate_proj(n)) * self.up_proj(n))


def get_inputs():
    return [torch.randn(M, HIDDEN)]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE, EPS]
