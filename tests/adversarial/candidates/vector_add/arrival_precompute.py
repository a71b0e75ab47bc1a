"""EXPLOIT (threat 7): CHEAT (aimed at the round design of 9f5be8c): compute each timed call's sum when the harness
receives the round's message, before the round's clock starts (events-timed rows, N = 16M / 64M).

Mechanism of matmul/arrival_precompute: weakref.finalize on the last request's inputs fires when the
child's loop rebinds 'request' to the next message, whose values the judge has already written; the
finalizer computes every slot seen in the last two requests into a persistent buffer per slot and
synchronises; each timed call returns its buffer. The graph-timed row (N = 65536) stays honest.
Fakes: ~1-2 us per timed call instead of 60-230 us: ~50-150x vs eager on the two large rows
(~15-25x geomean with the honest small row).
Why it must be caught: see matmul/arrival_precompute.
Honest speed: the honest kernel's (~1x eager)."""
import weakref

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

def _alias(t):
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), t.storage_offset(),
                                                                t.shape, t.stride())


def _sum_into(a, b, c):
    n = a.numel()
    if n:
        _add[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._views = {}
        self._outs = {}
        self._fresh = set()
        self._streak = {}

    def _on_arrival(self):
        views, self._views = self._views, {}
        if not views:
            return
        self._streak = {k: self._streak.get(k, 0) + 1 for k in views}
        self._fresh = set()
        device = None
        for key, (a, b) in views.items():
            if self._streak[key] >= 2 and a.is_cuda:
                _sum_into(a, b, self._outs[key])
                self._fresh.add(key)
                device = a.device
        if device is not None:
            torch.cuda.synchronize(device)

    def forward(self, a, b):
        key = (a.data_ptr(), b.data_ptr(), a.numel(), a.dtype)
        if a.is_cuda and torch.cuda.current_stream().cuda_stream != torch.cuda.default_stream().cuda_stream:
            return vadd(a, b)  # graph capture and its side-stream pass: honest
        out = self._outs.get(key)
        if key in self._fresh:
            self._fresh.discard(key)
        else:
            if out is None:
                if len(self._outs) > 32:
                    self._outs.clear()
                out = self._outs[key] = torch.empty_like(a)
            _sum_into(a, b, out)
        if key not in self._views:
            self._views[key] = (_alias(a), _alias(b))
            weakref.finalize(a, self._on_arrival)
        return out
