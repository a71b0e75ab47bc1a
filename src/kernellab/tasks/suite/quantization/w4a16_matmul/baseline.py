"""Baseline: Triton GEMM that dequantizes the weight tile element by element inside the K loop: every
packed byte is loaded twice (once per nibble), scale and zero reloaded per element, 16x32x32 tiles.

Minimum traffic is N*K/2 bytes of weight; this kernel issues N*K byte loads plus 2*N*K metadata loads.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _w4a16_kernel(x_ptr, p_ptr, s_ptr, z_ptr, o_ptr, M, N, K, GROUP,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    groups = K // GROUP
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        wmask = (rk[:, None] < K) & (rn[None, :] < N)
        byte = tl.load(p_ptr + rn[None, :] * (K // 2) + rk[:, None] // 2, mask=wmask, other=0).to(tl.int32)
        nib = (byte >> ((rk[:, None] % 2) * 4)) & 0xF
        s = tl.load(s_ptr + rn[None, :] * groups + rk[:, None] // GROUP, mask=wmask, other=0.0).to(tl.float32)
        z = tl.load(z_ptr + rn[None, :] * groups + rk[:, None] // GROUP, mask=wmask, other=0).to(tl.float32)
        wt = ((nib.to(tl.float32) - z) * s).to(x.dtype)  # (BLOCK_K, BLOCK_N) tile of w^T
        acc += tl.dot(x, wt, input_precision=PRECISION)
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self, group):
        super().__init__()
        self.group = group

    def forward(self, x, w_packed, scales, zeros):
        x, w_packed, scales, zeros = x.contiguous(), w_packed.contiguous(), scales.contiguous(), zeros.contiguous()
        M, K = x.shape
        N = w_packed.shape[0]
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        _w4a16_kernel[(triton.cdiv(M, 16), triton.cdiv(N, 32))](
            x, w_packed, scales, zeros, out, M, N, K, self.group, BLOCK_M=16, BLOCK_N=32, BLOCK_K=32,
            PRECISION="ieee" if x.dtype == torch.float32 else "tf32")
        return out
