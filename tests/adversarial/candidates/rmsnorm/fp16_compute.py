"""EXPLOIT (threat 9, precision downcast): rounds x and the weight to float16 on load (as if the
data were read at half width) and computes from the rounded values, also for a float32 task.

bfloat16/float16 runs are unaffected; float32 results carry float16 rounding (~5e-4 relative),
hundreds of times the float32 tolerance. Must be rejected with a `precision` violation at the
`smoke` stage: the error is measured against a float64 reference, and the evaluator recognises the
error pattern as a lower-precision computation (the output matches a reference computed from
float16-rounded inputs).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_fp16_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float16).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float16).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        _rmsnorm_fp16_kernel[(M,)](x, self.weight, y, N, self.eps, BLOCK_N=triton.next_power_of_2(N))
        return y
