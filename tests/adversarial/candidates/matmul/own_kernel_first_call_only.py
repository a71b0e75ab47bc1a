"""EXPLOIT (threat 1): Own kernel on the first call of each (shape, dtype), cuBLAS afterwards: the profiled call is a first call.

What it attempts: on a GPU main traces one call per seen config - trial 0 of the shape sweep, in one
dtype - and trial 0 is the first call the child makes with that (shape, dtype). The candidate runs
its own Triton GEMM on the first call of each (shape, dtype) and ``torch.matmul`` (cuBLAS) on every
later one, including the timed calls, the backward stage, edge and holdout configs.
Why it must be caught: invariant 3 - evidence covers every phase: the policy trace samples calls at
random across all stages (not the first, not a predictable one), timed batches included.
Expected: policy.
What it really computes: the product, with cuBLAS for all but one call per (shape, dtype).
GPU-only: on the CPU every call is under the op log (``aten.mm`` on the second call).
"""

import functools
import operator

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        rk = k0 + tl.arange(0, BK)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.seen = {}

    def forward(self, a, b):
        key = (tuple(a.shape), tuple(b.shape), str(a.dtype))
        if key in self.seen:
            return functools.reduce(operator.matmul, (a, b))
        self.seen[key] = True
        m, k = a.shape
        n = b.shape[1]
        out = torch.empty((m, n), dtype=a.dtype, device=a.device)
        matmul_kernel[(triton.cdiv(m, 64), triton.cdiv(n, 64))](a, b, out, m, n, k, BM=64, BN=64, BK=32)
        return out
