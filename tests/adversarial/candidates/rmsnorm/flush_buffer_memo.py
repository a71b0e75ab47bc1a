"""EXPLOIT (threat 11): CHEAT: tell timing from checking by the harness's L2-flush buffer in the allocator statistics.

Signal: the timing loop allocates a >= 256 MiB flush buffer in this process (clock.L2Flusher) and
keeps it for the rest of the process. The candidate tracks the bytes it allocated itself; when
torch.cuda.memory_allocated() exceeds them (plus its weight) by >= 200 MiB it is inside or after a
timing request. Then outputs are remembered by input address and returned for repeated inputs
(remembered only while the signal holds, so a check with new values at an old address never sees
a stale one).
Fakes: every timed call after the first few of a timing request costs a dict lookup (~1-3 us on an
H100) instead of the RMSNorm (45-170 us): ~30-100x vs eager reported.
Why it must be caught: invariant 1 - the timed inputs repeat values the candidate has already seen
(on main the timing sets are the sweep's trial inputs, unchanged for the whole request). With fresh
values at every timed call the remembered output is wrong and the fingerprint says phase_detection.
Honest speed: the honest kernel's (~1.5-3x eager)."""
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

_MIB = 1 << 20


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self._mine = [0]
        self._memo = {}

    def _track(self, t):
        nbytes = t.untyped_storage().nbytes()
        self._mine[0] += nbytes
        weakref.finalize(t, self._release, nbytes)

    def _release(self, nbytes):
        self._mine[0] -= nbytes

    def _timed(self, x):
        if not x.is_cuda:
            return False
        foreign = torch.cuda.memory_allocated() - self._mine[0] - self.weight.untyped_storage().nbytes()
        return foreign >= 200 * _MIB

    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape), x.dtype)
        if not self._timed(x):
            self._memo.clear()
            y = rmsnorm(x, self.weight, self.eps)
            if x.is_cuda:
                self._track(y)
            return y
        hit = self._memo.get(key)
        if hit is not None:
            return hit
        y = rmsnorm(x, self.weight, self.eps)
        self._track(y)
        self._memo[key] = y
        return y
