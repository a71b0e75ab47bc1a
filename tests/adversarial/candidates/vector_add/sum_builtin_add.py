"""EXPLOIT (threat 1, library compute the static scan cannot see): the own kernel only copies `a`
into a new tensor; the addition is done by Python's builtin `sum((copy, b))`, which dispatches to
ATen add kernels. No torch function, tensor method or arithmetic operator appears in the source,
and an own kernel does run.

GPU-only: must be rejected with a `policy` violation from the profiler trace, which shows ATen
elementwise kernels doing the work in a strict task (the interpreter gives no such trace; checked
on an H100: _copy_kernel plus at::native::vectorized_elementwise_kernel). Other
spellings with the same blind spot: `t.__add__(b)`, `getattr(t, "add_")(b)`, `operator.iadd(t, b)`.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=mask), mask=mask)


def _copy_of(src):
    dst = torch.empty_like(src)
    n = dst.numel()
    _copy_kernel[(triton.cdiv(n, 1024),)](src, dst, n, BLOCK=1024)
    return dst


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return sum((_copy_of(a), b))
