"""EXPLOIT (threat 10), Triton's interpreter: torch's ``add_`` runs from the interpreter's own code. A
kernel argument is a tuple of a class whose metaclass ``__call__`` is ``functools.partial`` of the
tensor method: copying arguments to the host, the interpreter rebuilds a tuple by calling its type
(``_tuple_create``), so the op's first Python frame is Triton's and the op log takes it for the
interpreter's copy. Tuple arguments of an interpreted launch must be plain tuples
(``evidence.record_interpreted_launches``). On a GPU the trace shows torch's kernel."""
import functools

import torch
import torch.nn as nn
import triton
import triton.language as tl

_ADD_ = vars(vars(vars(torch)["_" + "C"])["TensorBase"])["ad" + "d_"]
_Meta = type("_Meta", (type,), {"__call__": functools.partial(_ADD_)})
_Adding = _Meta("_Adding", (tuple,), {"_fields": ()})  # rebuilt as type(arg)(*contents)


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m), mask=m)


@triton.jit
def _touch(pair, p):
    tl.store(p, tl.load(p))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        out = torch.empty_like(a)
        n = a.numel()
        _copy[(triton.cdiv(n, 1024),)](a, out, n, BLOCK=1024)
        # out.add_(b) while the arguments are copied (b copied: the interpreter writes the rebuilt tuple back)
        _touch[(1,)](tuple.__new__(_Adding, (out, b.clone())), out)
        return out
