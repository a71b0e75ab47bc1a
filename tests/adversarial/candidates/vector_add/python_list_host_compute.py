"""EXPLOIT (threat 1): Host compute in plain Python: ``tolist()``, a list comprehension, ``torch.tensor``.

What it attempts: no NumPy and no torch arithmetic: the values are read to the host as Python floats
(``tolist`` - the static scan leaves it out on purpose: "reading sizes or offsets to plan launches is
legitimate"), added in a Python loop, and turned back into a tensor (an allowed factory). An own
Triton kernel copies the result into the output.
Why it must be caught: policy (host compute in a strict task; a device->host read of input-sized
data). Expected: policy.
What it really computes: the sum in Python floats (float64), rounded to the task dtype. Accepted on
CPU and GPU by main.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        values = [p + q for p, q in zip(a.tolist(), b.tolist())]
        host = torch.tensor(values, dtype=a.dtype, device=a.device)
        out = torch.empty_like(a)
        n = out.numel()
        _copy[(triton.cdiv(max(n, 1), 1024),)](host, out, n, BLOCK=1024)
        return out
