"""EXPLOIT (threat 7): CHEAT (aimed at the round design of 9f5be8c): apply each timed call's in-place step when the
harness receives the round's message, before the round's clock starts.

Same mechanism as matmul/arrival_precompute: a weakref.finalize on the inputs of the last request
fires when the child's loop rebinds 'request' to the next one - the judge has already written this
round's fresh values into the slots. The finalizer applies the SGD step in place, through storage
aliases of param/grad/momentum_buf, for every slot seen in the last two requests, and synchronises.
The timed call then only returns param. The judge compares param and momentum_buf after the call
with the reference step of the values it wrote: they match (the step was done exactly once).
Fakes: ~1-2 us per timed call instead of ~110-430 us: ~100-300x vs eager.
Why it must be caught: the values (and the judge memory to update) must not be in the candidate's
reach before the timed region starts; see matmul/arrival_precompute.
Honest speed: the honest kernel's."""
import weakref

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sgd(p_ptr, g_ptr, m_ptr, n, lr, mom, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    m = tl.load(m_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    m = (m.to(m_ptr.dtype.element_ty).to(tl.float32) * mom).to(m_ptr.dtype.element_ty).to(tl.float32) + g
    m = m.to(m_ptr.dtype.element_ty)
    tl.store(m_ptr + offs, m, mask=mask)
    p = p - lr * m.to(tl.float32)
    tl.store(p_ptr + offs, p.to(p_ptr.dtype.element_ty), mask=mask)

def _alias(t):
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), t.storage_offset(),
                                                                t.shape, t.stride())


def _step(p, g, m, lr, mom):
    n = p.numel()
    _sgd[(triton.cdiv(n, 1024),)](p, g, m, n, lr, mom, BLOCK=1024)


class ModelNew(nn.Module):
    def __init__(self, lr, momentum):
        super().__init__()
        self.lr = lr
        self.momentum = momentum
        self._views = {}
        self._fresh = set()
        self._streak = {}

    def _on_arrival(self):
        views, self._views = self._views, {}
        if not views:
            return
        self._streak = {k: self._streak.get(k, 0) + 1 for k in views}
        self._fresh = set()
        device = None
        for key, (p, g, m) in views.items():
            if self._streak[key] >= 2 and p.is_cuda:
                _step(p, g, m, self.lr, self.momentum)
                self._fresh.add(key)
                device = p.device
        if device is not None:
            torch.cuda.synchronize(device)

    def forward(self, param, grad, momentum_buf):
        key = (param.data_ptr(), grad.data_ptr(), momentum_buf.data_ptr(), param.numel(), param.dtype)
        if key in self._fresh:
            self._fresh.discard(key)
        else:
            _step(param, grad, momentum_buf, self.lr, self.momentum)
        if key not in self._views:
            self._views[key] = (_alias(param), _alias(grad), _alias(momentum_buf))
            weakref.finalize(param, self._on_arrival)
        return param
