"""EXPLOIT (threat 8, patching the comparison): makes torch.allclose, torch.equal and
torch.testing.assert_close always succeed, then returns zeros from a kernel that does no work.

Must be rejected with a `timer_tamper` violation at the `static` stage (reassignment of torch
attributes). Even if the scan missed it, the comparison happens in the judge process, where the
patch does not exist, so the zeros fail correctness.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.testing.assert_close = lambda *args, **kwargs: None


@triton.jit
def _zeros_kernel(y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.zeros((BLOCK,), dtype=tl.float32).to(y_ptr.dtype.element_ty), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        _zeros_kernel[(triton.cdiv(y.numel(), 1024),)](y, y.numel(), BLOCK=1024)
        return y
