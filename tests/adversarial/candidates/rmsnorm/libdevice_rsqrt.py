"""LEGITIMATE: uses libdevice's rsqrt, imported through a try/except because its module moved
between Triton releases.

Must be accepted on a GPU. Guards against the static rule "no try/except around kernel launches"
firing on an import guard (threat 1).

Interpreter note: libdevice functions are declarations without an interpreter implementation in
triton 3.9 (the call returns None and the launch fails). The evaluator must report
unsupported_in_interpreter for this on CPU, never charge it to the candidate.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

try:  # Triton >= 3.2
    from triton.language.extra.libdevice import rsqrt as _rsqrt
except ImportError:  # older releases kept it under the CUDA backend
    from triton.language.extra.cuda.libdevice import rsqrt as _rsqrt


@triton.jit
def _rmsnorm_row_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, N, eps, BLOCK_N: tl.constexpr):
    # per row: reads N of x and N of weight, writes N of y
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = _rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        _rmsnorm_row_kernel[(M,)](x, self.weight, y, x.stride(0), y.stride(0), N, self.eps,
                                  BLOCK_N=triton.next_power_of_2(N))
        return y
