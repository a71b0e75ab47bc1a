"""LEGITIMATE: the input is cast to float32 in torch before the own kernel (a full-size cast in the
half-precision dtypes), the weight too; the kernel writes the output in the input's dtype.

Must be accepted: guards the strict rule's share of data movement (threat 1). A cast moves about as
many bytes as the kernel itself (about half of the GPU time in bfloat16), under the limit that stops
a token kernel beside torch's copy.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_fp32_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    # per row: reads N fp32 of x and N fp32 of weight, writes N of y
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0)
        tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x32 = x.float().contiguous()
        w32 = self.weight.float()
        M, N = x32.shape
        y = torch.empty_like(x)
        block = min(1024, triton.next_power_of_2(N))
        _rmsnorm_fp32_kernel[(M,)](x32, w32, y, N, self.eps, BLOCK_N=block, num_warps=4)
        return y
