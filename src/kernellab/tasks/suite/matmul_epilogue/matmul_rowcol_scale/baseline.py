"""Baseline: Triton 32x32x32-tile GEMM, both scales applied in the epilogue, no L2 swizzle.

2*M*N*K FLOPs; (M*K + N*K + M*N) elements plus the scales.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scaled_mm_kernel(a_ptr, b_ptr, rs_ptr, cs_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        bt = tl.load(b_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0.0)
        acc += tl.dot(a, bt, input_precision=PRECISION)
    rs = tl.load(rs_ptr + rm, mask=rm < M, other=0.0)
    cs = tl.load(cs_ptr + rn, mask=rn < N, other=0.0)
    out = acc * rs[:, None] * cs[None, :]
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], out.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B, row_scale, col_scale):
        A = A.contiguous()
        B = B.contiguous()
        M, K = A.shape
        N = B.shape[0]
        C = torch.empty((M, N), device=A.device, dtype=A.dtype)
        _scaled_mm_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
            A, B, row_scale.contiguous(), col_scale.contiguous(), C, M, N, K, BLOCK_M=32, BLOCK_N=32, BLOCK_K=32,
            PRECISION="ieee" if A.dtype == torch.float32 else "tf32")
        return C
