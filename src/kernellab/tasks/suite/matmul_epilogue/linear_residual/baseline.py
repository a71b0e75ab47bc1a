"""Baseline: Triton, 32x32x32-tile GEMM with the residual added in the epilogue, one program per tile.

Fused, but small tiles and no L2 swizzle; 2*M*N*K FLOPs, (M*K + N*K + 2*M*N) elements minimum.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _linear_residual_kernel(x_ptr, w_ptr, r_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                            BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        wt = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(x, wt, input_precision=PRECISION)
    out_mask = (rm[:, None] < M) & (rn[None, :] < N)
    acc += tl.load(r_ptr + rm[:, None] * N + rn[None, :], mask=out_mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + rm[:, None] * N + rn[None, :], acc.to(y_ptr.dtype.element_ty), mask=out_mask)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features, bias=False)

    def forward(self, x, residual):
        x = x.contiguous()
        residual = residual.contiguous()
        w = self.proj.weight.contiguous()
        M, K = x.shape
        N = w.shape[0]
        y = torch.empty((M, N), device=x.device, dtype=x.dtype)
        _linear_residual_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
            x, w, residual, y, M, N, K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
            PRECISION="ieee" if x.dtype == torch.float32 else "tf32")
        return y
