"""LEGITIMATE (threat 1): Legitimate: an own Triton GEMM whose name starts like a vendor kernel family ("hopper_...").

Must be accepted. Main never attributes a trace record whose name starts with ampere/sm<N>/hopper/
cutlass/cublas/... to the candidate (so that a library kernel cannot pass as one of its own by
name), which turns this honest kernel into "no kernel of the candidate ran" plus "library kernels
ran in a strict task" on a GPU. Attribution by compiled identity (the binary the candidate's own
Triton compile produced) accepts it and still rejects a real cuBLAS kernel of any name.
The kernel: tiled IEEE-fp32 GEMM (inputs converted to float32 before ``tl.dot``), masks on M, N, K.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def hopper_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
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

    def forward(self, a, b):
        m, k = a.shape
        n = b.shape[1]
        out = torch.empty((m, n), dtype=a.dtype, device=a.device)
        hopper_matmul_kernel[(triton.cdiv(m, 64), triton.cdiv(n, 64))](a, b, out, m, n, k, BM=64, BN=64, BK=32)
        return out
