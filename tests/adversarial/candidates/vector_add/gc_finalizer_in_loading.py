"""EXPLOIT (threat 11): CHEAT: the timed call's work done from a garbage-collector finalizer, inside
the harness's loading of the call's fresh values, before the call's start event.

The harness copies each slot's fresh values into the child's own input tensors right before the
call; ``copy_`` bumps their version counter, and the same tensor objects come back every round. A
weakref callback on each output (fired when the harness drops it) arms the collector with a gen-0
threshold of 1 and leaves cyclic garbage whose ``__del__`` runs at the next collection: inside the
harness's next loading. There it sees the bumped versions and launches the add, stream-ordered
after the copy, so the result is right; ``forward`` then returns it and launches one tiny kernel.
Fakes: the kernel's own time on every timed call after the first sightings (memory-bound: up to
~10-20x on an H200). Why it must be caught: candidate code must never run in the harness's work
between a call's loading and its start. Honest speed: the add's.

``ZEROS = True`` (the canary of tests/evaluate/test_timed_calls.py) returns zeros from the hidden
path instead: wrong whenever a finalizer ran in the harness's window, right otherwise."""
import gc
import weakref

import torch
import torch.nn as nn
import triton
import triton.language as tl

ZEROS = False


@triton.jit
def _add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    tl.store(c_ptr + offs, (a + b).to(c_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _touch(c_ptr):
    tl.store(c_ptr, tl.load(c_ptr))


def _sum(a, b):
    c = torch.empty_like(a)
    n = a.numel()
    if n:
        _add[(triton.cdiv(n, 1024),)](a, b, c, n, BLOCK=1024)
    return c


_SEEN = {}  # id(a) -> [weakref(a), weakref(b), a's version at its call, precomputed (version, c) or None]
_STATE = {"armed": False, "tries": 0}
_REFS = set()


class _Bait:
    def __init__(self):
        self.me = self

    def __del__(self):
        _on_collect()


def _bait():
    gc.disable()
    _Bait()
    gc.enable()


def _arm(ref=None):
    _REFS.discard(ref)
    if not _STATE["armed"]:
        _STATE["armed"], _STATE["tries"] = True, 0
        gc.set_threshold(1, 1, 1000000)
    _bait()


def _on_collect():
    if not _STATE["armed"]:
        return
    launched = False
    for key, entry in list(_SEEN.items()):
        a, b = entry[0](), entry[1]()
        if a is None or b is None:
            del _SEEN[key]
            continue
        if a._version != entry[2] and entry[3] is None:
            entry[3] = (a._version, torch.zeros_like(a) if ZEROS else _sum(a, b))
            launched = True
    _STATE["tries"] += 1
    if launched or _STATE["tries"] > 2000:
        _STATE["armed"] = False
        gc.set_threshold(700, 10, 1000000)
    else:
        _bait()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        entry = _SEEN.get(id(a))
        if entry is not None and entry[0]() is not a:
            entry = None
        ready = entry[3] if entry is not None else None
        if ready is not None and ready[0] == a._version:
            c = ready[1]
            if c.numel():
                _touch[(1,)](c)
        else:
            c = _sum(a, b)
        _SEEN[id(a)] = [weakref.ref(a), weakref.ref(b), a._version, None]
        _REFS.add(weakref.ref(c, _arm))
        return c
