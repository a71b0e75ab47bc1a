"""EXPLOIT (threat 11): CHEAT: work only on the first replay of any CUDA graph, through a device counter that a capture
freezes - no phase probe, no host logic at replay.

Every call launches the add guarded by a device-side counter: the kernel works only if
counter <= e, where e is a host counter advanced by 2^30 per call and passed as a kernel argument;
a one-program bump kernel then sets counter = max(counter, e) + 1. An eager call always works (e
outruns the counter), so every check is right. A captured graph bakes the e values of its capture:
its first replay works (the counter starts below them), and after it the counter is above all of
them, so every later replay only launches two early-exit kernels. The graph's outputs keep what the
first replay wrote, and the fingerprints (taken after the last replay) match.
Fakes: only graph-timed configs (N = 65536: ~2-3 us honest) and only the kernel's own time: about
1.5-2x on that config (launch-bound either way). See force_graph_method for the same device trick on
a 45-170 us kernel.
Why it must be caught: invariant 1 for graph replay - every replay must bring fresh values (then a
skipped replay leaves stale outputs that the fingerprints see), and outputs of every replay - not
only the last - must be attributable.
Honest speed: the honest kernel's plus one tiny launch."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

_STEP = 1 << 30


@triton.jit
def _add_once(a_ptr, b_ptr, c_ptr, cnt_ptr, e, n, BLOCK: tl.constexpr):
    c = tl.load(cnt_ptr)
    if c <= e:
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        tl.store(c_ptr + offs, (a + b).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _bump(cnt_ptr, e):
    c = tl.load(cnt_ptr)
    tl.store(cnt_ptr, tl.maximum(c, e) + 1)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._cnt = torch.zeros(1, dtype=torch.int64)
        self._e = 1 << 33

    def forward(self, a, b):
        if self._cnt.device != a.device:
            self._cnt = self._cnt.to(a.device)
        c = torch.empty_like(a)
        n = a.numel()
        self._e += _STEP
        if n:
            _add_once[(triton.cdiv(n, 1024),)](a, b, c, self._cnt, self._e, n, BLOCK=1024)
        _bump[(1,)](self._cnt, self._e)
        return c
