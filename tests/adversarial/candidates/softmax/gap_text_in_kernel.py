"""EXPLOIT (threat 11, a verdict chosen by the candidate): for rows longer than one block, the
kernel itself raises NotImplementedError with the very words of the Triton interpreter's own gap
("extern_elementwise not supported in interpreter mode"), from inside an interpreted launch.

Text, exception type and "raised during a kernel launch" are all the candidate's to choose; what it
cannot choose is the code that raised. Must be rejected as a plain failure (edge config, 4099-element
rows), never `unsupported_in_interpreter` (invariant 6). On a GPU the raise does not compile.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_N = 1024


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, stride, N, BLOCK_N: tl.constexpr):
    # per row: reads N, writes N
    if N > BLOCK_N:
        raise NotImplementedError("extern_elementwise not supported in interpreter mode")
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride + cols, mask=mask, other=float("-inf")).to(tl.float32)
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        _softmax_kernel[(M,)](x, y, x.stride(0), N, BLOCK_N=BLOCK_N)
        return y
