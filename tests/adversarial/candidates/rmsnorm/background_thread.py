"""EXPLOIT (threat 6, deferred result on a background thread): returns an empty output at once and
launches the kernel that fills it from a thread a moment later, so a timer around forward (and the
launch stream's events) miss the work.

Must be rejected with a `deferred_result` violation: the static scan bans thread creation, the
child's thread count is checked after each call, and outputs are fingerprinted only after a
synchronize. (It could also be reported as process_escape; this corpus expects deferred_result.)
"""

import threading
import time

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_into_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _fill_later(self, x: torch.Tensor, y: torch.Tensor) -> None:
        time.sleep(0.002)
        M, N = x.shape
        _rmsnorm_into_kernel[(M,)](x, self.weight, y, N, self.eps, BLOCK_N=triton.next_power_of_2(N))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        threading.Thread(target=self._fill_later, args=(x, y), daemon=True).start()
        return y
