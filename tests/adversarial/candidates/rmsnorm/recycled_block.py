"""EXPLOIT (threat 2, recycled output block): computes the output properly on the first call for each
shape, then on later calls returns ``torch.empty_like(x)`` without writing it.

With the CUDA caching allocator, the harness freeing the previous output and the candidate asking
for the same size returns the same block, still holding the previous result; when a timing loop
repeats the same inputs the answer is right and the call costs nothing. Must be rejected with an
`allocator_reuse` violation: outputs are NaN-poisoned blocks before correctness calls, inputs are
fresh every call, and outputs of timed calls are fingerprinted. GPU-only: the premise is the CUDA
caching allocator (checked on an H100: with the same input and each output dropped, every call
returned the right answer).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_row_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
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
        self._seen_shapes = set()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        key = (tuple(x.shape), x.dtype)
        y = torch.empty_like(x)
        if key in self._seen_shapes:
            return y  # the allocator's recycled block already holds "the" answer
        self._seen_shapes.add(key)
        M, N = x.shape
        _rmsnorm_row_kernel[(M,)](x, self.weight, y, N, self.eps, BLOCK_N=triton.next_power_of_2(N))
        return y
