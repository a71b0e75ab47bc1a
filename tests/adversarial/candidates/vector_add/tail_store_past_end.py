"""EXPLOIT (threat 13, memory safety): the store has no mask, so the last program writes up to 127
elements past the end of the output.

The loads are masked (the tail reads zeros), the store is not. Every element of the output is right,
and on the GPU the bytes written past its end land in the caching allocator's rounding: blocks are
rounded up to 512 bytes, and 127 elements of any dtype past the end of every config of this task
stay inside that rounding, so no other tensor is hit and every output check passes. With another
allocator, another N or another BLOCK it corrupts whatever follows the output. Caught by the
sanitize stage: compute-sanitizer memcheck, run with torch's caching allocator off, sees a store
outside the output's allocation (an "Invalid __global__ write").
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_tail_unmasked(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(out_ptr + offs, (a + b).to(out_ptr.dtype.element_ty))  # no mask: the tail spills


class ModelNew(nn.Module):
    BLOCK = 128

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a_flat = a.contiguous().view(-1)
        b_flat = b.contiguous().view(-1)
        out = torch.empty_like(a_flat)
        n = out.numel()
        _add_tail_unmasked[(triton.cdiv(n, self.BLOCK),)](a_flat, b_flat, out, n, BLOCK=self.BLOCK, num_warps=4)
        return out.view(a.shape)
