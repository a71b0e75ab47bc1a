"""EXPLOIT: Disguising a failure as an interpreter gap through the source text: any exception inside a kernel,
plus the word "libdevice" anywhere in the file (here a comment), reads as an interpreter gap.

What it attempts: the triton interpreter wraps every exception raised while a kernel body runs in
``InterpreterError``; main then calls it a gap when the *candidate's source* contains "libdevice",
"tl.extra", "inline_asm", ... - a comment is enough. The kernel raises inside its own body on the
lengths it cannot handle (no tail path), so the CPU verdict is ``unsupported_in_interpreter``
instead of ``failed``. (Tuning note, libdevice: the fast path avoids libdevice calls.)
Why it must be caught: invariant 6 - only the harness, by an exception of the interpreter with a
known signature, classifies a gap; never candidate text, comments or candidate-raised exceptions.
Expected: status failed (edge stage).
What it really computes: a correct sum for lengths divisible by 8.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add8(a_ptr, b_ptr, o_ptr, n, HAS_TAIL: tl.constexpr, BLOCK: tl.constexpr):
    if HAS_TAIL:
        raise ValueError("no tail path")
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(o_ptr + offs, (a + b).to(o_ptr.dtype.element_ty), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        n = a.numel()
        out = torch.empty_like(a)
        _add8[(triton.cdiv(n, 1024),)](a, b, out, n, HAS_TAIL=n % 8 != 0, BLOCK=1024)
        return out
