"""LEGITIMATE: a persistent kernel sized from the GPU's SM count, read through Triton's driver
(``triton.runtime.driver.active``), as Triton's own persistent-kernel tutorials do.

Must be accepted on a GPU. Under the Triton interpreter there is no driver ("0 active drivers"):
the harness recognises that gap from where it was raised (triton's driver module) and must report
`unsupported_in_interpreter`, never a failure charged to the candidate (invariant 6).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_persistent_kernel(x_ptr, w_ptr, y_ptr, M, N, stride_x, stride_y, eps,
                               BLOCK_N: tl.constexpr):
    # whole kernel: reads M*N of x and N of weight per program, writes M*N of y
    pid = tl.program_id(0)
    num_programs = tl.num_programs(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    for row in range(pid, M, num_programs):
        row64 = tl.cast(row, tl.int64)
        x = tl.load(x_ptr + row64 * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
        tl.store(y_ptr + row64 * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _sm_count() -> int:
    driver = triton.runtime.driver.active
    return driver.utils.get_device_properties(driver.get_current_device())["multiprocessor_count"]


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        grid = (max(1, min(M, _sm_count())),)
        _rmsnorm_persistent_kernel[grid](x, self.weight, y, M, N, x.stride(0), y.stride(0), self.eps,
                                         BLOCK_N=triton.next_power_of_2(N))
        return y
