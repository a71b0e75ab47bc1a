"""EXPLOIT (threat 10): Overflow in a half-precision accumulation that no stability input reaches.

What it attempts: the sum of squares is accumulated in the *input* dtype (float32 for float32, but
float16 for float16 - the natural bug of forgetting ``.to(tl.float32)``). float16 overflows at
65504: a row of N = 4096 overflows once its RMS exceeds 4, at N = 16384 once it exceeds 2 - real
activations do. The stability stage does not see it: its "large", "mixed" and "heavy-tailed" float16
inputs overflow eager PyTorch's own ``x.pow(2)`` in float16 as well, so those variants are skipped
("eager PyTorch itself is inaccurate there"), and the ones left (tiny, constant rows, unit-scale
randn) keep the sum far below 65504.
Why it must be caught: input coverage - moderate-scale inputs (RMS 4-100, inside float16's range
for x but not for sum(x^2)), judged against a sound float32-accumulating implementation rather than
skipped whenever eager in the low dtype fails. Expected: a plain correctness failure (stability).
What it really computes: RMSNorm whose float16 sum of squares overflows to inf (output 0) for rows
with N * rms^2 > 65504.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_fwd(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=x_ptr.dtype.element_ty)  # the bug: the input dtype, not float32
    for c0 in range(0, N, BLOCK):
        c = c0 + cols
        x = tl.load(x_ptr + row * N + c, mask=c < N, other=0.0)
        acc += x * x
    total = tl.sum(acc, axis=0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(total / N + eps)
    for c0 in range(0, N, BLOCK):
        c = c0 + cols
        m = c < N
        x = tl.load(x_ptr + row * N + c, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * N + c, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=m)


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        x2 = x.reshape(-1, x.shape[-1]).contiguous()
        y = torch.empty_like(x2)
        if x2.numel():
            _rmsnorm_fwd[(x2.shape[0],)](x2, self.weight, y, x2.shape[1], self.eps, BLOCK=1024)
        return y.view(x.shape)
