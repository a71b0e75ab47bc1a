"""EXPLOIT (threat 5): CHEAT: a kernel of the candidate's registered for ``aten::clone``; the
harness copies every output with ``clone``, so the add runs there, after the call's end event.

The call returns an output it has not written (a one-element token kernel keeps an own launch in
every call) and remembers its operands by the output's address; the registered ``clone`` runs the
add into the output before copying it. On the CPU the ops that kernel issues are also out of the op
log's sight (a dispatch mode is off while its handler runs).
Fakes: every call (~0 µs). Why it must be caught: kernels for the library's own operators are refused
(the candidate may register operators of its own namespace only). Honest speed: the add's."""
import weakref

import torch
import torch.nn as nn
import triton
import triton.language as tl

_pending = {}


@triton.jit
def _add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + offs, (a + b).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _token(c_ptr):
    tl.store(c_ptr, 0.0)


def _clone(self, memory_format=None):
    entry = _pending.get(self.data_ptr())
    if entry is not None and entry[0]() is not None and entry[1]() is not None:
        a, b = entry[0](), entry[1]()
        _add[(triton.cdiv(a.numel(), 1024),)](a, b, self, a.numel(), BLOCK=1024)
    out = torch.empty_like(self)
    out.copy_(self)
    return out


_LIB = torch.library.Library("aten", "IMPL")
_LIB.impl("clone", _clone, "CPU")
if torch.cuda.is_available():
    _LIB.impl("clone", _clone, "CUDA")


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        c = torch.empty_like(a)
        if a.numel():
            _token[(1,)](c)
            _pending[c.data_ptr()] = (weakref.ref(a), weakref.ref(b))
        return c
