"""EXPLOIT (threat 9): CHEAT: in float16 and bfloat16 the running maximum starts at 0, not -inf.

Right on every zero-mean row and on rows shifted up (their maximum is above 0 anyway); on rows far
below zero every exp(x - 0) underflows float32 and the row is 0/0. float32 starts at -inf (its
stability rows at -1000 would show it at once). Rows at -100 (where the half dtypes' shift used to
be) stay within bfloat16's tolerance: exp(-100) is still a float32 denormal.
Fakes: correctness on one-signed rows below about -104 in half precision.
Why it must be caught: stability inputs per declared domain must reach where such shortcuts break."""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, y_ptr, stride, N, START, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    m = tl.full((BLOCK_N,), START, dtype=tl.float32)
    s = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        scale = tl.where(m_new == float("-inf"), 0.0, tl.exp(m - m_new))
        s = s * scale + tl.where(m_new == float("-inf"), 0.0, tl.exp(x - m_new))
        m = m_new
    m_row = tl.max(m, axis=0)
    s_row = tl.sum(tl.where(m == float("-inf"), 0.0, s * tl.exp(m - m_row)), axis=0)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(y_ptr + row * stride + cols, (tl.exp(x - m_row) / s_row).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        start = float("-inf") if x.dtype == torch.float32 else 0.0
        _softmax[(M,)](x, y, x.stride(0), N, start, BLOCK_N=min(64, triton.next_power_of_2(N)))
        return y
