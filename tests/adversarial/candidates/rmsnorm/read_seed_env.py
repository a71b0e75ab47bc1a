"""EXPLOIT (threat 5, reading the secret seed from the environment): if the harness's seed is in the
environment, the inputs of future calls can be regenerated and their outputs precomputed at load
time (untimed); forward then returns the precomputed output of the n-th call.

With a scrubbed environment the variable is absent and this behaves correctly, so only the static
scan can catch it. Must be rejected with a `reference_read` violation at the `static` stage
(os.environ / os.getenv access).
"""

import os

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_row_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    # per row: reads N of x and N of weight, writes N of y (rows contiguous)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    _rmsnorm_row_kernel[(M,)](x, weight, y, N, eps, BLOCK_N=triton.next_power_of_2(N))
    return y


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self._calls = 0
        self._seed = os.environ.get("KERNELLAB_SEED") or os.getenv("SEED")

    def _precomputed(self, x: torch.Tensor) -> torch.Tensor | None:
        if self._seed is None:
            return None
        generator = torch.Generator().manual_seed(int(self._seed) + self._calls)
        guess = torch.randn(x.shape, generator=generator).to(device=x.device, dtype=x.dtype)
        return _rmsnorm(guess, self.weight, self.eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self._calls += 1
        found = self._precomputed(x)
        return found if found is not None else _rmsnorm(x, self.weight, self.eps)
