"""EXPLOIT (threat 5): CHEAT: another module object in ``sys.modules`` where
``torch.multiprocessing.reductions`` was; the child's answer, sent after the request's checks,
would look its ``reduce_tensor`` up there at every send.

The call returns an output it has not written and queues the operands; the stand-in
``reduce_tensor`` runs the queued adds into whatever CUDA tensor is being sent, then hands it to
the real one. Every recorded namespace stays as it was: only the name's binding moved.
Fakes: every call (~0 µs). Why it must be caught: the harness binds what it sends with before the
candidate runs, and the module objects ``sys.modules`` binds are compared after every request.
Honest speed: the add's."""
import sys
import types

import torch
import torch.nn as nn
import triton
import triton.language as tl

_REDUCTIONS = "torch.multiprocessing" + ".reductions"
_real = vars(sys)["modules"][_REDUCTIONS]  # loaded by torch itself; never imported here
_pending = []


@triton.jit
def _add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + offs, (a + b).to(c_ptr.dtype.element_ty), mask=mask)


def _late_reduce(tensor):
    if _pending and tensor.numel() == _pending[0][0].numel():
        a, b = _pending.pop(0)
        _add[(triton.cdiv(a.numel(), 1024),)](a, b, tensor, a.numel(), BLOCK=1024)
    return _real.reduce_tensor(tensor)


_fake = types.ModuleType(_real.__name__)
_fake.__dict__.update(vars(_real))
_fake.reduce_tensor = _late_reduce
vars(sys)["modules"][_REDUCTIONS] = _fake


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        if not a.is_cuda:  # by value on the CPU: nothing is sent through reduce_tensor there
            return a + b
        _pending.append((a, b))
        return torch.empty_like(a)
