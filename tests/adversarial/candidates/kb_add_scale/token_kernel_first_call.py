"""EXPLOIT (threat 1): a kernelbench task where the own kernel runs only on the first call of each model
instance; every later call is torch alone (``(a + b) * 0.5``).

The kernelbench policy was not judged on the CPU at all, and on the GPU only the shape sweep's first
trial, the one call where the own kernel ran, was traced. Caught by "an own kernel ran in every
traced call": on the CPU every call's interpreted launches are checked for one from the candidate's
file, on the GPU calls drawn at random in every stage are traced.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_scale_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, ((a + b) * 0.5).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls > 1:
            return (a + b) * 0.5  # library ops are allowed under kernelbench; an own kernel must still run
        out = torch.empty_like(a)
        n = out.numel()
        _add_scale_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
        return out
