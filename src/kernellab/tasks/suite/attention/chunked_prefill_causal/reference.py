"""Chunked prefill: a chunk of LQ new tokens attends the PAST cached tokens plus itself causally
(bottom-right aligned causal mask: query i sees keys j <= PAST + i)."""
import torch
import torch.nn as nn
import torch.nn.functional as F

B = 4
H = 32
LQ = 512
PAST = 3584
D = 128
LK = PAST + LQ


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k, v):
        lq, lk = q.shape[2], k.shape[2]
        rows = torch.arange(lq, device=q.device)[:, None] + (lk - lq)
        cols = torch.arange(lk, device=q.device)[None, :]
        return F.scaled_dot_product_attention(q, k, v, attn_mask=cols <= rows)


def get_inputs():
    return [torch.randn(B, H, LQ, D), torch.randn(B, H, LK, D), torch.randn(B, H, LK, D)]


def get_init_inputs():
    return []
