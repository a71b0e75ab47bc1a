"""Baseline: Triton, per image a (C_OUT x C_IN) @ (C_IN x H*W) GEMM with 32x32x32 tiles and the bias in
the epilogue; the image index is a grid dimension. 2 * N * C_OUT * C_IN * H * W FLOPs.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _pointwise_kernel(x_ptr, w_ptr, b_ptr, y_ptr, C_IN, C_OUT, P, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    n = tl.program_id(0)
    ro = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rp = tl.program_id(2) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for c0 in range(0, C_IN, BLOCK_K):
        rc = c0 + tl.arange(0, BLOCK_K)
        w = tl.load(w_ptr + ro[:, None] * C_IN + rc[None, :], mask=(ro[:, None] < C_OUT) & (rc[None, :] < C_IN),
                    other=0.0)
        x = tl.load(x_ptr + n * C_IN * P + rc[:, None] * P + rp[None, :], mask=(rc[:, None] < C_IN) & (rp[None, :] < P),
                    other=0.0)
        acc += tl.dot(w, x, input_precision=PRECISION)
    acc += tl.load(b_ptr + ro, mask=ro < C_OUT, other=0.0).to(tl.float32)[:, None]
    tl.store(y_ptr + n * C_OUT * P + ro[:, None] * P + rp[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=(ro[:, None] < C_OUT) & (rp[None, :] < P))


class ModelNew(nn.Module):
    def __init__(self, c_in, c_out):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, kernel_size=1, bias=True)

    def forward(self, x):
        x = x.contiguous()
        N, C_IN, H, W = x.shape
        w = self.conv.weight.reshape(self.conv.out_channels, C_IN).contiguous()
        C_OUT = w.shape[0]
        y = torch.empty((N, C_OUT, H, W), device=x.device, dtype=x.dtype)
        grid = (N, triton.cdiv(C_OUT, 32), triton.cdiv(H * W, 32))
        _pointwise_kernel[grid](x, w, self.conv.bias, y, C_IN, C_OUT, H * W, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
                                PRECISION="ieee" if x.dtype == torch.float32 else "tf32")
        return y
