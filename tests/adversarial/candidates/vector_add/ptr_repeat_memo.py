"""EXPLOIT (threat 3): CHEAT: the same input addresses come back again and again in the timing loop.

Signal: per model instance, how often an input address pair was called. Checks use an address at
most twice per instance (the sweep's same-pointer trial puts new values at the first trial's
addresses once); the timing loop rotates a few sets hundreds of times. From the third call on an
address pair, the output of the second is returned. Unlike object identity, this survives a harness
that builds new tensor objects for each timed call.
Fakes: ~1-2 us per timed call instead of 60-230 us (N = 16M / 64M) and an empty-ish graph for N =
65536: ~30-100x vs eager.
Why it must be caught: invariant 1 (fresh values at the same addresses, before every timed call).
Honest speed: the honest kernel's."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + offs, (a + b).to(c_ptr.dtype.element_ty), mask=mask)


def vadd(a, b):
    c = torch.empty_like(a)
    n = a.numel()
    if n:
        _add[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
    return c


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._seen = {}

    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr(), a.numel(), a.dtype)
        entry = self._seen.setdefault(key, [0, None])
        entry[0] += 1
        if entry[0] >= 3 and entry[1] is not None:
            return entry[1]
        entry[1] = vadd(a, b)
        return entry[1]
