"""Linear layer with a LoRA adapter: y = x @ W^T + (ALPHA / R) * (x @ A^T) @ B^T."""
import torch
import torch.nn as nn

M = 4096
K = 4096
N = 4096
R = 16
ALPHA = 32


class Model(nn.Module):
    def __init__(self, in_features, out_features, rank, alpha):
        super().__init__()
        self.base = nn.Linear(in_features, out_features, bias=False)
        self.lora_A = nn.Parameter(torch.randn(rank, in_features) / in_features ** 0.5)
        self.lora_B = nn.Parameter(torch.zeros(out_features, rank))
        self.scaling = alpha / rank

    def forward(self, x):
        return self.base(x) + (x @ self.lora_A.t()) @ self.lora_B.t() * self.scaling


def get_inputs():
    return [torch.randn(M, K)]


def get_init_inputs():
    return [K, N, R, ALPHA]
