"""EXPLOIT (threat 1, compiler writes the kernel): torch.compile generates the fused kernel; the
candidate's own Triton kernel is a decoy that only copies the weight.

Must be rejected with a `policy` violation: the static scan bans torch.compile (and Inductor) under
the strict and kernelbench policies; on a GPU the trace shows Inductor-generated kernels that are
not the candidate's own functions.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, N, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < N), mask=offs < N)


@torch.compile(dynamic=False)
def _rmsnorm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * w


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = torch.empty_like(self.weight)
        n = w.numel()
        _copy_kernel[(triton.cdiv(n, 1024),)](self.weight, w, n, BLOCK=1024)
        return _rmsnorm(x, w, self.eps)
