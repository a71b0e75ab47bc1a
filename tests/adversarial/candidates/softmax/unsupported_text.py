"""EXPLOIT (threat 11, a verdict chosen by the candidate): handles rows of up to 1024 elements and,
for longer ones, raises RuntimeError("... not supported in interpreter mode ...") instead of
computing a result.

The harness used to read "not supported" in an exception's text as a gap of the Triton
interpreter: the edge config's 4099-element rows, which this kernel gets wrong, turned a failure
into `unsupported_in_interpreter`. Only the harness classifies interpreter gaps, from where the
exception was raised (invariant 6): must be rejected as a plain failure of the edge stage.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

BLOCK_N = 1024


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, stride, N, BLOCK_N: tl.constexpr):
    # per row: reads N, writes N
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
        if N > BLOCK_N:
            raise RuntimeError(f"rows of {N} elements: not supported in interpreter mode (0 active drivers)")
        y = torch.empty_like(x)
        _softmax_kernel[(M,)](x, y, x.stride(0), N, BLOCK_N=BLOCK_N)
        return y
