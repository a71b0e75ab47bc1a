"""EXPLOIT (threat 2): CHEAT: the call returns an output it has not written; its instance attribute
``detach`` runs the add when the harness copies the output, after the call's end event.

``type(c)`` is exactly ``torch.Tensor`` and the container is a plain tuple, so the output contract
holds; only the method lookup ``c.detach()`` finds the instance attribute first. The copy then holds
the right sum, computed outside the call's events (in a timing round: between its end and done
events, which nothing bounds).
Fakes: every call (~0 µs). Why it must be caught: the harness copies outputs through the class's own
methods, so an unwritten output is what the judge sees. Honest speed: the add's."""
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


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        c = torch.empty_like(a)
        real_detach = torch.Tensor.detach.__get__(c)

        def detach():
            n = a.numel()
            if n:
                _add[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
            return real_detach()

        c.detach = detach
        return c
