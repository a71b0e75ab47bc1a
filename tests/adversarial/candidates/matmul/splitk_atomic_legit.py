"""LEGITIMATE (threat 13): Legitimate: split-K with ``tl.atomic_add`` into a ``torch.zeros`` float32 accumulator.

Must be accepted. The output differs in the last bits from call to call (atomics reorder float
additions), which the determinism stage allows ("both within tolerance"); the accumulator comes
from ``torch.zeros`` (a fill: data movement) and is cast to the task dtype by torch (a cast). A
defence against racy split-K (splitk_without_atomics) must tell a read-modify-write race from an
atomic accumulation, and a defence against uninitialised scratch must accept scratch that is
zero-filled before use.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _splitk_atomic(a_ptr, b_ptr, c_ptr, M, N, K, K_PART, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    k_lo = tl.program_id(2) * K_PART
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K_PART, BK):
        rk = k_lo + k0 + tl.arange(0, BK)
        km = (rk < K) & (rk < k_lo + K_PART)
        a = tl.load(a_ptr + rm[:, None] * K + rk[None, :], mask=(rm[:, None] < M) & km[None, :], other=0.0)
        b = tl.load(b_ptr + rk[:, None] * N + rn[None, :], mask=km[:, None] & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
    cm = (rm[:, None] < M) & (rn[None, :] < N)
    tl.atomic_add(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=cm)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        m, k = a.shape
        n = b.shape[1]
        splits = 4 if k >= 256 else 1
        c = torch.zeros((m, n), dtype=torch.float32, device=a.device)
        part = triton.cdiv(k, splits)
        _splitk_atomic[(triton.cdiv(m, 64), triton.cdiv(n, 64), splits)](a, b, c, m, n, k, part, BM=64, BN=64, BK=32)
        return c.to(a.dtype)
