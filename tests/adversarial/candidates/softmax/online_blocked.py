"""LEGITIMATE: an online softmax over column blocks (running maximum and rescaled running sum, as
in flash attention), then a second pass that writes exp(x - m) / s.

Must be accepted on every stability input, the shifted ones included: the running maximum starts
at -inf and each block's sum is rescaled by exp(m_old - m_new), so no exp ever sees a positive
argument. Guards against stability inputs that reject streaming kernels for their rounding order.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _online_softmax_kernel(x_ptr, y_ptr, stride, N, BLOCK_N: tl.constexpr):
    # per row: reads x twice (2N), writes N
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    m = tl.full((BLOCK_N,), float("-inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        # lanes that have seen only padding stay at -inf; exp(-inf - -inf) would be NaN
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
    BLOCK_N = 64  # small blocks so that even the small config runs several of them

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        _online_softmax_kernel[(M,)](x, y, x.stride(0), N, BLOCK_N=min(self.BLOCK_N, triton.next_power_of_2(N)))
        return y
