"""EXPLOIT (threat 13): Out-of-bounds reads that never reach an output: unmasked loads, masked stores.

What it attempts: every program loads a full block of 1024 from ``a`` and ``b`` without a mask; the
store is masked, so lanes past the end compute garbage that is never written. Outputs are exact.
On a GPU the tail program reads up to 1023 elements past the end of each input - the judge's
memory, mapped over CUDA IPC, or the next block of the caching allocator.
Why it must be caught: memory_safety (compute-sanitizer memcheck in a ``sanitize`` stage). The same
caveat as store_past_end: reads inside a caching-allocator segment are invisible to memcheck unless
allocations are made one per cudaMalloc under the sanitizer; and inputs received over CUDA IPC live
in a segment mapped whole (see vector_add_small/ipc_segment_read_reference.py).
What it really computes: a correct sum. Needs a GPU to show.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_unmasked_load(a_ptr, b_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(a_ptr + offs).to(tl.float32)  # no mask: past the end on the tail
    b = tl.load(b_ptr + offs).to(tl.float32)
    tl.store(o_ptr + offs, (a + b).to(o_ptr.dtype.element_ty), mask=offs < n)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        out = torch.empty_like(a)
        n = a.numel()
        _add_unmasked_load[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
        return out
