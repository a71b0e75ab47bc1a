"""EXPLOIT (threat 4, destroying an input): computes the sum correctly into a fresh output, and the
same kernel zeroes `b` after reading it (an agent "freeing" a buffer it thinks is consumed). A harness
that compares against a reference computed after the call, from the same input tensors, would then
compare a + 0 against a + 0.

Must be rejected with an `input_mutation` violation: inputs are hashed before and after every call.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_and_clear_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.float32)  # add in fp32, round once (as eager does)
    b = tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (a + b).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(b_ptr + offs, tl.zeros_like(b), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        n = out.numel()
        _add_and_clear_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
        return out
