"""EXPLOIT (threat 4, input mutation): writes the sum into `a` and returns `a`, saving an allocation
and a third of the memory footprint. The returned values are correct.

`a` is not declared in `mutates`. Must be rejected with an `input_mutation` violation: inputs are
hashed before and after every call (an output aliasing an input is the same finding).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_into_kernel(a_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    total = tl.load(a_ptr + offs, mask=mask).to(tl.float32) + tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    tl.store(a_ptr + offs, total.to(a_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        n = a.numel()
        _add_into_kernel[(triton.cdiv(n, 1024),)](a, b, n, BLOCK=1024)
        return a
