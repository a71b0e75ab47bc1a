"""Grouped GEMM for mixture-of-experts: tokens sorted by expert, each group times its expert's weight.

x: (T, K) tokens already permuted so that expert e owns rows [start_e, start_e + group_sizes[e]);
w: (E, K, N) per-expert weights; group_sizes: (E,) int64 summing to T (some may be zero).
"""
import torch
import torch.nn as nn

T = 8192
E = 8
K = 4096
N = 2048


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w, group_sizes):
        out = x.new_empty(x.shape[0], w.shape[2])
        start = 0
        for e, size in enumerate(group_sizes.tolist()):
            out[start:start + size] = x[start:start + size] @ w[e]
            start += size
        return out


def get_inputs():
    x = torch.randn(T, K)
    w = torch.randn(E, K, N) / K ** 0.5
    cuts = torch.randint(0, T + 1, (E - 1,)).sort().values
    bounds = torch.cat([torch.zeros(1, dtype=torch.int64), cuts, torch.full((1,), T, dtype=torch.int64)])
    group_sizes = bounds[1:] - bounds[:-1]
    return [x, w, group_sizes]


def get_init_inputs():
    return []
