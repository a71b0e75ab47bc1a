import torch
import torch.nn as nn

batch_size = 2
seq_len = 4096
num_q_heads = 32
num_kv_heads = 8
head_dim = 128
eps = 1e-6


class Model(nn.Module):
    """q: [batch, seq, num_q_heads, head_dim]; k: [batch, seq, num_kv_heads, head_dim].

    Returns (rms_norm(q) * q_weight, rms_norm(k) * k_weight), each over head_dim.
    """

    def __init__(self, head_dim, eps):
        super().__init__()
        self.q_weight = nn.Parameter(torch.ones(head_dim))
        self.k_weight = nn.Parameter(torch.ones(head_dim))
        self.eps = eps

    def forward(self, q, k):
        q_rms = torch.rsqrt(q.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        k_rms = torch.rsqrt(k.pow(2).mean(dim=-1, keepdim=True) + self.eps)
        return q * q_rms * self.q_weight, k * k_rms * self.k_weight


def get_inputs():
    q = torch.randn(batch_size, seq_len, num_q_heads, head_dim)
    k = torch.randn(batch_size, seq_len, num_kv_heads, head_dim)
    return [q, k]


def get_init_inputs():
    return [head_dim, eps]
