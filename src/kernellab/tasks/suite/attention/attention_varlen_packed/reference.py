"""Variable-length causal attention over packed sequences (flash_attn_varlen layout).

q, k, v: (T, H, D) holding NSEQ sequences back to back; cu_seqlens: (NSEQ + 1,) int32 offsets
with cu_seqlens[0] = 0 and cu_seqlens[-1] = T. Attention is causal within each sequence and never
crosses sequence boundaries.
"""
import torch
import torch.nn as nn
import torch.nn.functional as F

T = 16384
NSEQ = 16
H = 32
D = 128


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v, cu_seqlens):
        out = torch.empty_like(q)
        bounds = cu_seqlens.tolist()
        for start, end in zip(bounds[:-1], bounds[1:]):
            qs, ks, vs = (t[start:end].transpose(0, 1) for t in (q, k, v))  # (H, len, D)
            out[start:end] = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True).transpose(0, 1)
        return out


def get_inputs():
    q, k, v = torch.randn(T, H, D), torch.randn(T, H, D), torch.randn(T, H, D)
    # NSEQ lengths >= 1 summing to T, different every call
    cuts = torch.randint(0, T - NSEQ + 1, (NSEQ - 1,)).sort().values
    edges = torch.cat([torch.zeros(1, dtype=torch.int64), cuts, torch.full((1,), T - NSEQ, dtype=torch.int64)])
    lengths = edges[1:] - edges[:-1] + 1
    cu_seqlens = torch.cat([torch.zeros(1, dtype=torch.int64), lengths.cumsum(0)]).to(torch.int32)
    return [q, k, v, cu_seqlens]


def get_init_inputs():
    return []
