"""LEGITIMATE: a complete add kernel whose name looks like a cuBLAS kernel family (``nvjet_...``).

Must be accepted. Guards against recognising library kernels by name patterns (a vendor-name list
once refused own kernels named like this, threat 1): what makes a kernel the candidate's is that its
own compile produced it.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def nvjet_tile_add(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # reads 2 elements, writes 1 per lane: 3 * n * elem bytes, n FLOPs
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (a + b).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        n = out.numel()
        nvjet_tile_add[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024, num_warps=4)
        return out
