"""EXPLOIT (threat 2, unwritten output): allocates the output with ``torch.empty_like(x)`` first,
launches a kernel that computes only the per-row inverse RMS into a scratch buffer, and returns the
output that no kernel ever wrote.

In a harness that computes the reference in the same process and frees it, that block comes back
with the right answer in it. Must be rejected with an `allocator_reuse` violation ("unwritten
output"): on a GPU the evaluator fills and frees blocks of the output size with NaN before
correctness calls, and the caching allocator hands one straight back. On the CPU, glibc malloc does
not reliably return a just-freed block (measured: 0% to 100% NaN), so there the evaluator must
poison differently, e.g. by filling the results of torch.empty* with NaN inside the child.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _inverse_rms_kernel(x_ptr, rstd_ptr, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(rstd_ptr + row, 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps))


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)  # never written
        rstd = torch.empty(M, device=x.device, dtype=torch.float32)
        _inverse_rms_kernel[(M,)](x, rstd, N, self.eps, BLOCK_N=triton.next_power_of_2(N))
        return y
