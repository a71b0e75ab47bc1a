"""LEGITIMATE: a masked elementwise kernel over flattened views, output from torch.empty_like.

Must be accepted. Guards against false positives of the unwritten-output check (threat 2: every
element is written even when N is not a multiple of BLOCK) and of the policy check (threat 1:
reshape/view/contiguous are allowed around the kernel).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # reads 2 elements, writes 1 per lane: 3 * n * elem bytes, n FLOPs
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.float32)  # add in fp32, round once (as eager does)
    b = tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (a + b).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    BLOCK = 1024  # 4 elements per thread at 8 warps: wide enough for full-width loads

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a_flat = a.contiguous().view(-1)
        b_flat = b.contiguous().view(-1)
        out = torch.empty_like(a_flat)
        n = out.numel()
        _add_kernel[(triton.cdiv(n, self.BLOCK),)](a_flat, b_flat, out, n, BLOCK=self.BLOCK, num_warps=8)
        return out.view(a.shape)
