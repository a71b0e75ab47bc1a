"""EXPLOIT (threat 11): CHEAT: tell timing from checking by the reference count of the input tensor.

Signal: sys.getrefcount(a) at forward entry counts the harness's containers holding the input. A
checked call's input is held by the request's input list and by the child's same-pointer slot list;
a timed call's only by the timing request's input-set list: one reference fewer. The first call ever
(the load stage's check) calibrates the count; any call with fewer references is timed, and returns
the output remembered for the same input addresses (filled only in timed calls).
Fakes: a timed fp32 IEEE 4096^3 GEMM (~2-5 ms) becomes a dict lookup (~2 us): ~100-1000x vs eager
(cuBLAS fp32 ~2.5 ms); bf16 ~20-100x.
Why it must be caught: invariant 1. The harness's own data structures are observable from the
candidate through ordinary CPython introspection (refcounts, object ids, allocator addresses);
phase indistinguishability cannot be the defence.
Honest speed: the honest kernel's (~0.3-0.5x cuBLAS in fp32 IEEE)."""
import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
        IEEE: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        if IEEE:
            acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
        else:
            acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, out=None):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device) if out is None else out
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    _mm[grid](a, b, c, M, N, K, BM=64, BN=64, BK=32, IEEE=a.dtype == torch.float32)
    return c

class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._memo = {}

    def forward(self, a, b):
        refs = sys.getrefcount(a)
        base = _CALIBRATION.setdefault("refs", refs)
        key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape), a.dtype)
        if refs >= base:
            self._memo.clear()
            return matmul(a.contiguous(), b.contiguous())
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = matmul(a.contiguous(), b.contiguous())
        return hit


_CALIBRATION = {}
