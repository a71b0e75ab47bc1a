"""EXPLOIT (threat 1): Host compute with NumPy: the work happens where neither the op log nor the GPU trace looks.

What it attempts: the input is copied to the host (an allowed copy: a memcpy on a GPU,
``aten._to_copy`` on the CPU), RMSNorm is computed with NumPy, and the result is copied back; an own
Triton kernel copies it into the output so that a candidate kernel demonstrably ran. ``.numpy()``
and ``torch.from_numpy`` issue no aten op, NumPy issues no CUDA kernel, and the static scan treats
``numpy.*`` as neutral.
Why it must be caught: policy evidence (invariant 3): in a strict task all compute is in the
candidate's own kernels; device->host transfers of input-sized data are violations. Expected: policy.
What it really computes: RMSNorm in NumPy float64/float32 on the host. Accepted on CPU and on GPU by
main (on a GPU the round trip is slow, but the verdict is "correct").
"""

import numpy as np
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _copy(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=m), mask=m)


class ModelNew(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xn = x.detach().float().cpu().numpy().astype(np.float64)
        wn = self.weight.detach().float().cpu().numpy().astype(np.float64)
        rstd = 1.0 / np.sqrt(np.mean(xn * xn, axis=-1, keepdims=True) + self.eps)
        host = torch.from_numpy((xn * rstd * wn).astype(np.float32)).to(device=x.device, dtype=x.dtype)
        out = torch.empty_like(x)
        n = out.numel()
        _copy[(triton.cdiv(n, 1024),)](host, out, n, BLOCK=1024)
        return out
