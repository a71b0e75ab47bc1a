"""Baseline: Triton, one program per (image plane, output row), a vector over output columns, and a
double loop over the largest bin (masked per lane). Reads each input element once per bin it
belongs to; writes each output once.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _adaptive_pool_kernel(x_ptr, y_ptr, H, W, OUT, MAX_KH, MAX_KW, BLOCK: tl.constexpr):
    plane = tl.program_id(0)
    oy = tl.program_id(1)
    ox = tl.arange(0, BLOCK)
    lanes = tl.zeros((BLOCK,), tl.int32)  # row bounds as vectors: scalar-and-vector masks upset the interpreter
    y0 = lanes + (oy * H) // OUT
    y1 = lanes + ((oy + 1) * H + OUT - 1) // OUT
    x0 = (ox * W) // OUT
    x1 = ((ox + 1) * W + OUT - 1) // OUT
    acc = tl.zeros((BLOCK,), tl.float32)
    for dy in range(0, MAX_KH):
        iy = y0 + dy
        for dx in range(0, MAX_KW):
            ix = x0 + dx
            m = (ox < OUT) & (iy < y1) & (ix < x1)
            acc += tl.load(x_ptr + plane * H * W + iy * W + ix, mask=m, other=0.0).to(tl.float32)
    count = ((y1 - y0) * (x1 - x0)).to(tl.float32)
    tl.store(y_ptr + plane * OUT * OUT + oy * OUT + ox, (acc / count).to(y_ptr.dtype.element_ty), mask=ox < OUT)


class ModelNew(nn.Module):
    def __init__(self, out_size):
        super().__init__()
        self.out_size = out_size

    def forward(self, x):
        x = x.contiguous()
        N, C, H, W = x.shape
        out = self.out_size
        y = torch.empty((N, C, out, out), device=x.device, dtype=x.dtype)
        max_kh = max(((i + 1) * H + out - 1) // out - (i * H) // out for i in range(out))
        max_kw = max(((i + 1) * W + out - 1) // out - (i * W) // out for i in range(out))
        _adaptive_pool_kernel[(N * C, out)](x, y, H, W, out, max_kh, max_kw,
                                            BLOCK=max(16, triton.next_power_of_2(out)))
        return y
