"""EXPLOIT (threat 1, library op): returns torch.matmul (cuBLAS), with a decoy Triton kernel that
writes zeros into the output first so that "an own kernel ran".

Must be rejected with a `policy` violation: the static scan flags torch.matmul under the strict
policy; on a GPU the trace shows cuBLAS GEMM kernels doing the work.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _zero_kernel(c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(c_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32).to(c_ptr.dtype.element_ty), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        c = torch.empty((a.shape[0], b.shape[1]), device=a.device, dtype=a.dtype)
        _zero_kernel[(triton.cdiv(c.numel(), 1024),)](c, c.numel(), BLOCK=1024)
        torch.matmul(a, b, out=c)
        return c
