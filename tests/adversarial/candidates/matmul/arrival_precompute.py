"""EXPLOIT (threat 7): CHEAT (aimed at the round design of 9f5be8c): do each timed call's work when the harness receives
the round's message - after the judge wrote the fresh values, before the round's clock starts.

Invariant 1 is now enforced with fresh values (a secret seed) written into shared slots before every
round, and every call checked. But the values are in place when the round's message reaches the
child, and candidate code can run right then: the child's loop does request = channel.recv(), and
rebinding 'request' frees the previous request's input tensors. A weakref.finalize on each input
the model was called with therefore runs when the NEXT request has been received. The model keeps
storage-sharing aliases of the slot memory (made with set_, so they do not keep the tensor object
alive); the finalizer computes, from that memory (now holding this round's values), the product of
every slot the last request called (its memory now holds the new request's values; a check request
on other memory just wastes that work), into a persistent output buffer per slot, and synchronises.
(Precomputing from the first timed round on matters: a first timed round done honestly puts its
work into the mean host time per call, and the host-clock check then flags the 1 us median.) The round then
starts; each call returns its slot's buffer at once. Every timed call is right, every check too.
Fakes: ~1-2 us per timed call instead of 0.3-5 ms: ~200x (bf16) to ~1000x+ (fp32 IEEE) vs eager.
No phase probe, no patching, no static finding.
Why it must be caught: "every call is a checked call" is not enough when the values are visible to
the candidate's process before the clock starts. The values must become visible only inside the
timed region (e.g. the judge writes them after the child has armed the round and is waiting on a
device-side flag, or the child's clock starts before it receives the values), or the judge's clock
must cover the whole request (device time of everything the child ran since the last round).
Honest speed: the honest kernel's."""
import weakref

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _mm(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
        IEEE: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        if IEEE:
            acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
        else:
            acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


def matmul(a, b, out=None):
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), dtype=a.dtype, device=a.device) if out is None else out
    grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
    _mm[grid](a, b, c, M, N, K, BM=64, BN=64, BK=32, IEEE=a.dtype == torch.float32)
    return c

def _alias(t):
    """A tensor on t's storage that does not keep the tensor object t alive (no _base)."""
    return torch.empty(0, dtype=t.dtype, device=t.device).set_(t.untyped_storage(), t.storage_offset(),
                                                                t.shape, t.stride())


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._views = {}
        self._outs = {}
        self._fresh = set()
        self._streak = {}

    def _on_arrival(self):
        views, self._views = self._views, {}
        if not views:
            return
        self._streak = {k: self._streak.get(k, 0) + 1 for k in views}
        self._fresh = set()
        device = None
        for key, (a, b) in views.items():
            if self._streak[key] >= 1 and a.is_cuda:
                matmul(a, b, out=self._outs[key])
                self._fresh.add(key)
                device = a.device
        if device is not None:
            torch.cuda.synchronize(device)

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape), a.dtype)
        out = self._outs.get(key)
        if key in self._fresh:
            self._fresh.discard(key)
        else:
            if out is None:
                if len(self._outs) > 32:
                    self._outs.clear()
                out = self._outs[key] = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
            matmul(a, b, out=out)
        if key not in self._views:
            self._views[key] = (_alias(a), _alias(b))
            weakref.finalize(a, self._on_arrival)
        return out
