"""LEGITIMATE: log-sum-exp in two passes over column blocks: the row maximum m first, then
m + log(sum(exp(x - m))).

Must be accepted on every stability input, the shifted ones included (exp never sees a positive
argument). Guards against stability inputs that no sound kernel could meet (threat 10).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _lse_kernel(x_ptr, out_ptr, stride, N, BLOCK_N: tl.constexpr):
    # per row: reads x twice (2N), writes 1
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    m = tl.full((BLOCK_N,), float("-inf"), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        m = tl.maximum(m, tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32))
    m_row = tl.max(m, axis=0)
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        acc += tl.exp(x - m_row)
    tl.store(out_ptr + row, (m_row + tl.log(tl.sum(acc, axis=0))).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        out = torch.empty(M, dtype=x.dtype, device=x.device)
        _lse_kernel[(M,)](x, out, x.stride(0), N, BLOCK_N=min(1024, triton.next_power_of_2(N)))
        return out
