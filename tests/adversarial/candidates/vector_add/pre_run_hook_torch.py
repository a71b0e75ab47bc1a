"""EXPLOIT (threat 1): the sum is done by torch in a pre-run hook of the candidate's kernel, which
itself does nothing.

On the CPU the hook runs inside the interpreter's launch, where the op log skipped every aten op as
the interpreter's own. Caught by where each op came from (the candidate's hook, not Triton's code);
on the GPU the hook's ``a + b`` is torch's add kernel in the trace.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < 1
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask), mask=mask)


def _host_add(a, b, out, *args, **kwargs):
    out.copy_(a + b)


_add_kernel.add_pre_run_hook(_host_add)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        out = torch.empty_like(a)
        _add_kernel[(1,)](a, b, out, out.numel(), BLOCK=16)
        return out
