"""LEGITIMATE: torch is used only to view, reshape, make contiguous and allocate around the kernel.

Must be accepted under the strict policy ("torch may allocate, view, copy, cast"). Guards against a
policy check (threat 1) that flags every torch call instead of only library compute.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_rows_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    # per row: reads N of x and N of weight, writes N of y (rows are contiguous, stride N)
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

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.shape
        n = shape[-1]
        rows = x.contiguous().view(-1, n)          # a view: no copy for contiguous inputs
        weight = self.weight.detach().reshape(n).contiguous()
        out = torch.empty((rows.shape[0], n), dtype=x.dtype, device=x.device)
        _rmsnorm_rows_kernel[(rows.shape[0],)](rows, weight, out, n, self.eps,
                                               BLOCK_N=triton.next_power_of_2(n))
        return out.view(shape)
