"""Dynamic W8A8 linear layer: quantize the activations per token to int8 on the fly, then an int8 GEMM
against a pre-quantized int8 weight with per-channel scales.

Numeric contract: activation quantization in float32 exactly as in quant_int8_per_token
(scale = max(amax |x_row|, 1e-8) / 127, q = clamp(round_half_to_even(x / scale), -127, 127));
exact integer dot products; out = acc * x_scale[m] * w_scale[n], rounded once to the input dtype.
"""
import torch
import torch.nn as nn

M = 4096
K = 4096
N = 4096


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w_q, w_scale):
        xf = x.float()
        x_scale = torch.clamp(xf.abs().amax(dim=-1, keepdim=True), min=1e-8) / 127.0
        x_q = torch.clamp(torch.round(xf / x_scale), -127, 127)
        acc = x_q.to(torch.float64) @ w_q.to(torch.float64).t()  # exact integer products
        out = acc * x_scale.to(torch.float64) * w_scale.to(torch.float64)[None, :]
        return out.to(x.dtype)


def get_inputs():
    x = torch.randn(M, K)
    w_q = torch.randint(-127, 128, (N, K), dtype=torch.int8)
    w_scale = torch.rand(N) * 0.001 + 0.0005
    return [x, w_q, w_scale]


def get_init_inputs():
    return []
