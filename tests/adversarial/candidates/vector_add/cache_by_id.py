"""EXPLOIT (threat 3, output cache keyed by object identity): remembers the output per (id(a), id(b))
and returns a clone of it without recomputing.

A timing loop that passes the same tensor objects costs a dictionary lookup. Must be rejected with an
`output_cache` violation: the evaluator refills the same input tensors with new values (same
objects, same pointers), and CPython reuses the ids of freed tensors for fresh ones, so a stale
output comes back for different inputs.
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


def _add(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    out = torch.empty_like(a)
    n = out.numel()
    _add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
    return out


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._cache = {}

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        key = (id(a), id(b))
        if key not in self._cache:
            self._cache[key] = _add(a, b)
        return self._cache[key].clone()
