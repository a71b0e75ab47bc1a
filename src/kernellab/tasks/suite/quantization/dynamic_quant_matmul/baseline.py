"""Baseline: two Triton kernels, unfused: (1) per-row int8 quantization writing x_q and x_scale to
memory (two passes over each row), (2) an int8 GEMM with int32 accumulation, 32x32x32 tiles, scales
applied in the epilogue. The int8 activations round-trip through memory (2 * M * K extra bytes).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _quant_rows(x_ptr, q_ptr, s_ptr, K, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    amax = tl.zeros((BLOCK,), tl.float32)
    for k0 in range(0, K, BLOCK):
        cols = k0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * K + cols, mask=cols < K, other=0.0).to(tl.float32)
        amax = tl.maximum(amax, tl.abs(x))
    scale = tl.math.div_rn(tl.maximum(tl.max(amax, 0), 1e-8), 127.0)
    tl.store(s_ptr + row, scale)
    for k0 in range(0, K, BLOCK):
        cols = k0 + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * K + cols, mask=cols < K, other=0.0).to(tl.float32)
        v = tl.minimum(tl.maximum(tl.math.div_rn(x, scale), -127.0), 127.0)
        v = (v + 12582912.0) - 12582912.0  # round half to even
        tl.store(q_ptr + row * K + cols, v.to(tl.int8), mask=cols < K)


@triton.jit
def _int8_gemm(x_ptr, w_ptr, xs_ptr, ws_ptr, o_ptr, M, N, K,
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
    out = acc.to(tl.float32) * xs[:, None] * ws[None, :]
    tl.store(o_ptr + rm[:, None] * N + rn[None, :], out.to(o_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, w_q, w_scale):
        x, w_q = x.contiguous(), w_q.contiguous()
        M, K = x.shape
        N = w_q.shape[0]
        x_q = torch.empty((M, K), device=x.device, dtype=torch.int8)
        x_scale = torch.empty((M,), device=x.device, dtype=torch.float32)
        _quant_rows[(M,)](x, x_q, x_scale, K, BLOCK=1024)
        out = torch.empty((M, N), device=x.device, dtype=x.dtype)
        _int8_gemm[(triton.cdiv(M, 32), triton.cdiv(N, 32))](x_q, w_q, x_scale, w_scale.contiguous(), out, M, N, K,
                                                            BLOCK_M=32, BLOCK_N=32, BLOCK_K=32)
        return out
