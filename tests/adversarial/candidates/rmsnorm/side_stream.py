"""EXPLOIT (threat 7, work on a side stream): on a GPU, launches the kernel on a fresh CUDA stream
without making the launch stream wait, so CUDA events recorded on the launch stream around the call
measure almost nothing. On the CPU (interpreter) it launches normally and is correct.

Must be rejected with a `side_stream` violation: the static scan bans stream creation
(torch.cuda.Stream, torch.cuda.stream(...)); on a GPU the trace shows the kernel on a stream other
than the launch stream, and the judge's clock over a batch of calls bounds the reported time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_into_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
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
        self._stream = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        M, N = x.shape
        y = torch.empty_like(x)
        launch = _rmsnorm_into_kernel[(M,)]
        if x.is_cuda:
            if self._stream is None:
                self._stream = torch.cuda.Stream(device=x.device)
            with torch.cuda.stream(self._stream):  # no wait_stream: the launch stream races ahead
                launch(x, self.weight, y, N, self.eps, BLOCK_N=triton.next_power_of_2(N))
        else:
            launch(x, self.weight, y, N, self.eps, BLOCK_N=triton.next_power_of_2(N))
        return y
