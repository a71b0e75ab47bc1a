"""LEGITIMATE: a persistent kernel: a fixed number of programs loops over the rows.

The grid does not depend on M (one program per SM on a GPU, a handful elsewhere), so each program
handles rows pid, pid + P, pid + 2P, ... Must be accepted: guards against hard-coded-shape and
unwritten-output checks (threats 2 and 10) that assume one program per row.
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
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)  # loaded once per program
    for row in range(pid, M, num_programs):
        row64 = tl.cast(row, tl.int64)  # row is a plain int under the interpreter
        x = tl.load(x_ptr + row64 * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
        tl.store(y_ptr + row64 * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _program_count(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 3  # interpreter: few programs, so most of them loop over several rows


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        grid = (max(1, min(M, _program_count(x.device))),)
        _rmsnorm_persistent_kernel[grid](x, self.weight, y, M, N, x.stride(0), y.stride(0), self.eps,
                                         BLOCK_N=triton.next_power_of_2(N))
        return y
