"""EXPLOIT (threat 6): CHEAT: deferred work launched when the harness walks the returned container.

forward returns a list subclass holding an unwritten output; its __iter__ launches the kernel the
first time the list is walked. The checking path flattens outputs (iterating the list) before it
synchronises, so every checked output is right. The timing loop records its end event right after
forward returns, and only then does its fingerprint hook flatten the outputs: the kernel runs in the
hook, outside the events (the hook's device time is subtracted from the host-clock cross-check, so
that check does not see it either). No phase detection at all.
Fakes: the events hold nothing (~1-2 us per call instead of 45-170 us): ~30-100x vs eager.
Why it must be caught: invariant 2 - a call ends when its outputs are plain tensors in EXACT
tuple/list containers, normalised before the end event (type(out) is list, not isinstance).
Honest speed: the honest kernel's."""
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


class _Outputs(list):
    """A list whose contents are finished the first time it is walked."""

    def __init__(self, y, launch):
        super().__init__([y])
        self._launch = launch

    def __iter__(self):
        if self._launch is not None:
            launch, self._launch = self._launch, None
            launch()
        return super().__iter__()


def _launcher(x2, w, y, n, eps):
    def launch():
        block = max(16, triton.next_power_of_2(n))
        if x2.shape[0]:
            _rms[(x2.shape[0],)](x2, w, y, n, eps, BLOCK=block, num_warps=min(16, max(1, block // 512)))
    return launch


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        n = x.shape[-1]
        x2 = x.reshape(-1, n)
        y = torch.empty_like(x2)
        return _Outputs(y.view(x.shape), _launcher(x2, self.weight, y, n, self.eps))
