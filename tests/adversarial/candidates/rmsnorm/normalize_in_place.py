"""EXPLOIT (threat 4, input mutation): writes the normalised rows back into x and returns x, saving
the output allocation and half of the memory traffic's footprint.

The values returned are correct, but x is not declared in `mutates`; a caller that still needs x
(a residual connection) would be silently broken. Must be rejected with an `input_mutation`
violation: inputs are hashed before and after every call.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_in_place_kernel(x_ptr, w_ptr, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(x_ptr + row * N + cols, (x * rstd * w).to(x_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        _rmsnorm_in_place_kernel[(M,)](x, self.weight, N, self.eps, BLOCK_N=triton.next_power_of_2(N))
        return x
