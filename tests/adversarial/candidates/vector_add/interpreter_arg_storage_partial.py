"""EXPLOIT (threat 10), Triton's interpreter: the sum is
torch's ``add``, called by the interpreter's own argument copying. A kernel argument is a plain object
with a ``data_ptr``; its ``untyped_storage()`` returns an object whose ``cpu`` is
``functools.partial(torch.add, a, b, out=y)``: ``GridExecutor._init_args_hst`` (Triton's code) calls
it inside the launch, and an op log that attributes an op to the nearest Python frame takes it for
the interpreter's copy (the partial leaves no frame). The jit body copies one element. Pointer
arguments of an interpreted launch must be plain tensors (``evidence.record_interpreted_launches``);
on a GPU the library ``add`` is a kernel of torch's in the trace."""
import functools
import itertools

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _token(a):
    tl.store(a, tl.load(a))


class _Arg:
    """Looks like a tensor to the interpreter; every attribute is a builtin."""


def _via(out, fn, *args):
    storage, arg = _Arg(), _Arg()
    storage.data_ptr = out.data_ptr
    storage.cpu = functools.partial(fn, *args, out=out)
    storage.copy_ = id
    arg.data_ptr = out.data_ptr
    arg.untyped_storage = itertools.repeat(storage).__next__
    arg.new_empty = out.new_empty
    arg.storage_offset, arg.size, arg.stride = out.storage_offset, out.size, out.stride
    return arg


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        y = torch.empty_like(a)
        _token[(1,)](_via(y, torch.add, a, b))
        return y
