"""EXPLOIT (threat 14): CHEAT (aimed at the round design of 9f5be8c): run each timed call's work inside the child's
decoding of the round's message, by wrapping the function the channel's unpickler calls to rebuild
every CUDA tensor the judge sends.

The channel's unpickler resolves ("torch.multiprocessing.reductions", "rebuild_cuda_tensor") by
module attribute at every load. The candidate imports that module with
importlib.import_module("torch.multiprocessing.reductions") (allowed: its root is torch; the name
torch.multiprocessing never appears as an attribute chain) and rebinds the attribute on the local
alias (the scan cannot resolve it). The wrapper rebuilds the tensor as before; if it is a slot the
model was called on in the last request (same address, shape and dtype), it runs the RMSNorm of its
current memory - the judge wrote the round's values before sending - into a persistent buffer and
synchronises. The round then starts; every timed call returns its buffer. Unlike arrival_precompute,
this does not depend on when the harness frees the previous request.
Fakes: ~1-2 us per timed call instead of 37-133 us: ~100-400x vs eager.
Why it must be caught: invariant 4 (the harness's deserialisation is reachable and rebindable) and
the timing design (values visible before the clock starts).
Honest speed: the honest kernel's."""
import importlib

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

_MODELS = []


def _install():
    red = importlib.import_module("torch.multiprocessing.reductions")
    original = red.rebuild_cuda_tensor

    def rebuild(*args, **kwargs):
        t = original(*args, **kwargs)
        for model in _MODELS:
            model._prepare(t)
        return t

    red.rebuild_cuda_tensor = rebuild


_install()


def _norm_into(x, w, eps, y):
    n = x.shape[-1]
    x2 = x.reshape(-1, n)
    block = max(16, triton.next_power_of_2(n))
    if x2.shape[0]:
        _rms[(x2.shape[0],)](x2, w, y, n, eps, BLOCK=block, num_warps=min(16, max(1, block // 512)))


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self._outs = {}
        self._called = set()
        self._fresh = set()
        _MODELS.clear()
        _MODELS.append(self)

    def _prepare(self, t):
        key = (t.data_ptr(), tuple(t.shape), t.dtype)
        if key in self._called and key in self._outs and t.is_cuda:
            _norm_into(t, self.weight, self.eps, self._outs[key])
            torch.cuda.synchronize(t.device)
            self._fresh.add(key)

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape), x.dtype)
        self._called.add(key)
        out = self._outs.get(key)
        if key in self._fresh:
            self._fresh.discard(key)
            return out
        if out is None:
            if len(self._outs) > 32:
                self._outs.clear()
            out = self._outs[key] = torch.empty_like(x)
        _norm_into(x, self.weight, self.eps, out)
        return out
