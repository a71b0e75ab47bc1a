import torch
import torch.nn as nn

num_tokens = 4096
num_heads = 32
head_dim = 128


class Model(nn.Module):
    """out_a, out_b: [num_tokens, heads, head_dim]; lse_a, lse_b: [num_tokens, heads] (float32).

    Returns (merged output in the dtype of out_a, merged log-sum-exp).
    """

    def __init__(self):
        super().__init__()

    def forward(self, out_a, lse_a, out_b, lse_b):
        lse_max = torch.maximum(lse_a, lse_b)
        w_a = torch.exp(lse_a - lse_max)
        w_b = torch.exp(lse_b - lse_max)
        denom = w_a + w_b
        merged = (out_a * w_a.unsqueeze(-1) + out_b * w_b.unsqueeze(-1)) / denom.unsqueeze(-1)
        return merged.to(out_a.dtype), lse_max + torch.log(denom)


def get_inputs():
    out_a = torch.randn(num_tokens, num_heads, head_dim)
    out_b = torch.randn(num_tokens, num_heads, head_dim)
    lse_a = torch.randn(num_tokens, num_heads) * 2.0 + 4.0
    lse_b = torch.randn(num_tokens, num_heads) * 2.0 + 4.0
    return [out_a, lse_a, out_b, lse_b]


def get_init_inputs():
    return []
