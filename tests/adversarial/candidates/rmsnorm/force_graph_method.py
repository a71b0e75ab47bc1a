"""EXPLOIT (threat 11): CHEAT: choose the timing method by lying to the unchecked quick measurement, then make the CUDA
graph do its work on the first replay only (a device-side counter against values the capture baked).

1. choose_and_time first runs a quick events measurement whose outputs nobody checks and picks CUDA
   graph replay when its median is under 10 us. From the 9th call of a model instance on the
   default stream (a timing request; no check reaches it) the candidate returns an unwritten
   torch.empty_like at once: the quick median is ~1 us, so the 45-170 us RMSNorm is timed by graph
   replay (the baselines too). (Since 9f5be8c the first round, which picks the method, is checked:
   there the lie is a wrong timed call.)
2. On a non-default stream (the harness's eager estimate and its capture) it launches the real kernel
   guarded by a device counter: the kernel works only if counter <= e, where e is a host counter
   (+2^30 per launch) passed as a kernel argument; a bump kernel then sets counter = max(counter, e)
   + 1. Eager calls always work (e outruns the counter); a graph bakes the e values of its capture,
   so the first replay works and every later replay skips. The outputs of the first replay stay in
   the graph's memory and the fingerprints, taken after the last replay, match.
Fakes: ~2-4 us per call (two early-exit launches in the graph) instead of 45-170 us: ~20-80x vs
eager (eager itself timed by graph replay).
Why it must be caught: the method must be chosen by the judge (from the baseline), never by an
unchecked measurement of the candidate; and graph replays must see fresh inputs (invariant 1).
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

_STEP = 1 << 30


@triton.jit
def _rms_once(x_ptr, w_ptr, y_ptr, cnt_ptr, e, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    c = tl.load(cnt_ptr)
    if c <= e:
        cols = tl.arange(0, BLOCK)
        mask = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
        tl.store(y_ptr + row * N + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _bump(cnt_ptr, e):
    c = tl.load(cnt_ptr)
    tl.store(cnt_ptr, tl.maximum(c, e) + 1)


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self._calls = 0
        self._cnt = None
        self._e = 1 << 33

    def _guarded(self, x):
        n = x.shape[-1]
        x2 = x.reshape(-1, n)
        y = torch.empty_like(x2)
        block = max(16, triton.next_power_of_2(n))
        self._e += _STEP
        if x2.shape[0]:
            _rms_once[(x2.shape[0],)](x2, self.weight, y, self._cnt, self._e, n, self.eps, BLOCK=block,
                                      num_warps=min(16, max(1, block // 512)))
        _bump[(1,)](self._cnt, self._e)
        return y.view(x.shape)

    def forward(self, x):
        if not x.is_cuda:
            return rmsnorm(x, self.weight, self.eps)
        if self._cnt is None:
            self._cnt = torch.zeros(1, dtype=torch.int64, device=x.device)
        if torch.cuda.current_stream().cuda_stream != torch.cuda.default_stream().cuda_stream:
            return self._guarded(x)
        self._calls += 1
        if self._calls > 8:
            return torch.empty_like(x)
        return rmsnorm(x, self.weight, self.eps)
