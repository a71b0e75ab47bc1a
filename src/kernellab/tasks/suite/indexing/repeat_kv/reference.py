import torch
import torch.nn as nn

batch_size = 4
num_kv_heads = 8
n_rep = 4
seq_len = 4096
head_dim = 128


class Model(nn.Module):
    """x: [batch, kv_heads, seq, head_dim]. Returns [batch, kv_heads * n_rep, seq, head_dim], where
    output head h is input head h // n_rep.
    """

    def __init__(self, n_rep):
        super().__init__()
        self.n_rep = n_rep

    def forward(self, x):
        batch, kv_heads, seq, head_dim = x.shape
        expanded = x[:, :, None, :, :].expand(batch, kv_heads, self.n_rep, seq, head_dim)
        return expanded.reshape(batch, kv_heads * self.n_rep, seq, head_dim)


def get_inputs():
    return [torch.randn(batch_size, num_kv_heads, seq_len, head_dim)]


def get_init_inputs():
    return [n_rep]
