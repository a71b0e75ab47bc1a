"""LEGITIMATE: Honest RMSNorm forward (reference point for the cheats of this folder): one program per row.

Expect: accepted. Honest speed on an H100: ~1.5-3x eager (one pass instead of eager's several)."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rms(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    r = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        n = x.shape[-1]
        x2 = x.reshape(-1, n)
        y = torch.empty_like(x2)
        block = max(16, triton.next_power_of_2(n))
        if x2.shape[0]:
            _rms[(x2.shape[0],)](x2, self.weight, y, n, self.eps, BLOCK=block, num_warps=min(16, max(1, block // 512)))
        return y.view(x.shape)
