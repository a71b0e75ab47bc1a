"""Baseline: Triton int8 tensor-core GEMM with int32 accumulation, 32x32x32 tiles (small for int8),
scales and bias applied in the epilogue. 2*M*N*K integer ops; (M*K + N*K) bytes of operands.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _w8a8_kernel(x_ptr, w_ptr, xs_ptr, ws_ptr, b_ptr, o_ptr, M, N, K,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0)
        wt = tl.load(w_ptr + rn[None, :] * K + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < K), other=0)
        acc += tl.dot(x, wt, out_dtype=tl.int32)
    xs = tl.load(xs_ptr + rm, mask=rm < M, other=0.0)
    ws = tl.load(ws_ptr + rn, mask=rn < N, other=0.0)
    bias = tl.load(b_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    out = acc.to(tl.float32) * xs[:, None] * ws[None, :] + bias[None, :]
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], out.to(o_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x_q, w_q, x_scale, w_scale, bias):
        x_q, w_q = x_q.contiguous(), w_q.contiguous()
        M, K = x_q.shape
        N = w_q.shape[0]
        out = torch.empty((M, N), device=x_q.device, dtype=bias.dtype)
        _w8a8_kernel[(triton.cdiv(M, 32), triton.cdiv(N, 32))](
            x_q, w_q, x_scale.contiguous(), w_scale.contiguous(), bias.contiguous(), out, M, N, K,
            BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
        return out
