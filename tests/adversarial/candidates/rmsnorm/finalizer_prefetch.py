"""EXPLOIT (threat 7): CHEAT: move each call's work into the gap between calls, triggered when the harness frees the
previous output (weakref.finalize), for the input set the rotation will hand over next.

Mechanism: the candidate records the sequence of input addresses. Once the last calls form a cycle
(period 1..8, repeated at least 3 times, which no check produces), the slot order is known. When an
output is freed (the round clock drops call j's output right after its copy, event 'done'), the
kernel for the successor slot is launched right then - after call j's end event, before call j+1's
flush and start event - and call j+1 returns the prepared tensor. Since 9f5be8c the judge writes
fresh values into every slot before each round, so all slots of a round already hold their values
when its first call starts: prefetching slot j+1 during the round is right; only the round's first
slot (the first address this model instance ever saw) is never prefetched (its values change
between rounds), so that call does its own work. The per-call median then reads ~0 and the judge's
concentration rule (round mean > 1.03 x median) falls back to round means: 1/n_slots of the work. The device time lands in
no event; the host-clock cross-check allows 250 us per call of "launch overhead", so work under
that is invisible to it (the prefetch is only done for outputs <= 128 MiB, i.e. < ~120 us of work).
Fakes: on main before 9f5be8c every call (~30-60x vs eager); since 9f5be8c the round mean counts
only the first slot's work: n_slots x (4-8x) the honest speedup on those rows.
Why it must be caught: invariant 1 (the prepared output is for values seen before - on main the
timing sets never change) AND the clock must bound hidden work much tighter than 250 us per call:
if the harness refreshes a set right after its call (ready for its next turn), the prefetch reads
fresh values and is right, so only the clock can catch it: events-vs-wall per batch with a small
allowance, or a device-side timestamp of every kernel the candidate launched (trace).
Honest speed: the honest kernel's (the same work, moved)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)


def rmsnorm(x, w, eps):
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    y = torch.empty_like(x2)
    block = max(16, triton.next_power_of_2(n))
    if x2.shape[0]:
        _rms[(x2.shape[0],)](x2, w, y, n, eps, BLOCK=block, num_warps=min(16, max(1, block // 512)))
    return y.view(x.shape)
import weakref

_MAX_PREFETCH_BYTES = 128 << 20


def _alias(t):
    """A tensor on t's storage that does not keep the tensor object t alive (no _base): the judge's
    slot memory stays readable across rounds, while each round's message brings new tensor objects."""
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), t.storage_offset(),
                                                                t.shape, t.stride())


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self._history = []
        self._inputs = {}
        self._ready = {}
        self._first = None

    def _successor(self):
        h = self._history
        for period in range(1, 9):
            if len(h) < 3 * period:
                break
            if all(h[-i] == h[-i - period] for i in range(1, 2 * period + 1)):
                return h[-period]
        return None

    def _prefetch(self):
        nxt = self._successor()
        if nxt is None or nxt == self._first:
            return
        x = self._inputs.get(nxt)
        if x is None or not x.is_cuda:
            return
        if x.numel() * x.element_size() > _MAX_PREFETCH_BYTES:
            return
        self._ready = {nxt: rmsnorm(x, self.weight, self.eps)}

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape), x.dtype)
        if self._first is None:
            self._first = key
        ready = self._ready.pop(key, None)
        self._ready = {}
        self._history = (self._history + [key])[-32:]
        if key not in self._inputs:
            self._inputs[key] = _alias(x)
        y = ready if ready is not None else rmsnorm(x, self.weight, self.eps)
        weakref.finalize(y, self._prefetch)
        return y
