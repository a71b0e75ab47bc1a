"""Block-wise fp8 weight dequantization (DeepSeek-V3 weight_dequant): one float32 scale per
BLOCK x BLOCK tile of an fp8 e4m3fn weight; w = q * scale_inv[i // BLOCK, j // BLOCK] in float32."""
import torch
import torch.nn as nn

N = 7168
K = 7168
BLOCK = 128


class Model(nn.Module):
    def __init__(self, block):
        super().__init__()
        self.block = block

    def forward(self, q, scale_inv):
        rows, cols = q.shape
        s = scale_inv.repeat_interleave(self.block, dim=0)[:rows].repeat_interleave(self.block, dim=1)[:, :cols]
        return q.float() * s


def get_inputs():
    q = torch.clamp(torch.randn(N, K) * 64.0, -448.0, 448.0).to(torch.float8_e4m3fn)
    nb, kb = (N + BLOCK - 1) // BLOCK, (K + BLOCK - 1) // BLOCK
    scale_inv = torch.rand(nb, kb) * 1e-4 + 1e-5
    return [q, scale_inv]


def get_init_inputs():
    return [BLOCK]
