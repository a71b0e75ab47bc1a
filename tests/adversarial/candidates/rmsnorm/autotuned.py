"""LEGITIMATE: @triton.autotune over several block sizes and warp counts, keyed on N.

Must be accepted. The autotuner launches the kernel several times on the first call of each N (its
benchmark writes the output repeatedly); a phase-detection or call-count heuristic must not treat
that as suspicious (threat 11), and the attribution of kernels must follow the autotuned function
(threat 1).

Interpreter note: with more than one config the autotuner benchmarks through the GPU driver, which
does not exist under TRITON_INTERPRET=1 (triton 3.9 raises "0 active drivers"). The evaluator must
make that work (e.g. pick the first config under the interpreter) or report
unsupported_in_interpreter; it must never charge it to the candidate.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_N": 256}, num_warps=2),
        triton.Config({"BLOCK_N": 1024}, num_warps=4),
        triton.Config({"BLOCK_N": 4096}, num_warps=8),
    ],
    key=["N"],
)
@triton.jit
def _rmsnorm_autotuned_kernel(x_ptr, w_ptr, y_ptr, stride_x, stride_y, N, eps, BLOCK_N: tl.constexpr):
    # per row: reads x twice (2N) and weight once (N), writes N
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * stride_x + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        _rmsnorm_autotuned_kernel[(M,)](x, self.weight, y, x.stride(0), y.stride(0), N, self.eps)
        return y
