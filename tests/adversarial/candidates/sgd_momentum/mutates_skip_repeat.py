"""EXPLOIT (threat 4): CHEAT: right for the first calls on an input object, then do nothing - the in-place updates of a
'mutates' task are not checked while timed.

Signal: the call count of the model instance (> 12 calls: a timing row; no check reaches it): the
step is skipped and param is returned untouched.
On main the timing stage fingerprints nothing for a task with 'mutates' (check_outputs is false), so
neither the returned param nor momentum_buf is looked at.
Fakes: ~1-2 us per timed call instead of ~110-430 us (P = 16M / 64M): ~100-300x vs eager.
Why it must be caught: invariant 1's second half - every judged output, updated 'mutates' inputs
included, is fingerprinted on every timed call (against what the call must produce from the values
it got, which for an iterated in-place step the judge must track or restore before each call).
Honest speed: the honest kernel's (~2-3x eager)."""
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


class ModelNew(nn.Module):
    def __init__(self, lr, momentum):
        super().__init__()
        self.lr = lr
        self.momentum = momentum
        self._calls = 0

    def forward(self, param, grad, momentum_buf):
        self._calls += 1
        if self._calls > 12:
            return param
        n = param.numel()
        _sgd[(triton.cdiv(n, 1024),)](param, grad, momentum_buf, n, self.lr, self.momentum, BLOCK=1024)
        return param
