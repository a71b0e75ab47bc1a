"""EXPLOIT (threat 4): CHEAT: its own kernel on every call the checks make, torch's add on timed calls.

Timed calls are recognisable: the child reuses its own input tensor objects for every round of a
row, so the same a and b objects come back, their version counters bumped once per round; checked
calls hand over new tensor objects (but for the sweep's one same-memory trial). From the third
sighting of a pair this candidate adds with torch (a library kernel in a strict task); before that
with its own Triton kernel. Every timed call is right, so only policy evidence of a timed round can
see it. The static scan's rule on library compute is dodged by naming the tensor parameter ``self``.
Fakes: the policy (a library kernel carries the timed work), not the speed.
Why it must be caught: the policy trace must cover timed calls as it covers checked ones."""
import weakref

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(c_ptr + offs, a + b, mask=mask)


def _library(self, other):
    return self.add(other)


_SIGHTINGS = {}


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        key = (id(a), id(b))
        seen = _SIGHTINGS.get(key)
        if seen is None or seen[0]() is not a or seen[1]() is not b:
            seen = _SIGHTINGS[key] = [weakref.ref(a), weakref.ref(b), 0]
        seen[2] += 1
        if seen[2] >= 3:
            return _library(a, b)
        c = a.new_empty(a.shape)
        n = a.numel()
        if n:
            _add[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
        return c
