"""LEGITIMATE: under the kernelbench policy, torch adds (a library kernel, allowed there) and the
candidate's own kernel scales the sum.

Must be accepted: guards the kernelbench rules (threat 1) against demanding strict's all-own compute:
an own kernel runs in every call and carries a real share of the GPU time (about 40% here).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, scale, BLOCK: tl.constexpr):
    # reads n, writes n elements
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (x * scale).to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        total = torch.add(a, b)
        out = torch.empty_like(total)
        n = out.numel()
        _scale_kernel[(triton.cdiv(n, 1024),)](total, out, n, 0.5, BLOCK=1024)
        return out
