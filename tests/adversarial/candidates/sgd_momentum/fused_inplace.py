"""LEGITIMATE: one fused kernel updates the declared `mutates` inputs (param, momentum_buf) in place
and returns param.

Must be accepted: guards against false positives of the input-mutation check (threat 4): inputs
listed in the task's `mutates` may change, and are compared as outputs instead of being hashed.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sgd_momentum_kernel(p_ptr, g_ptr, buf_ptr, n, lr, momentum, BLOCK: tl.constexpr):
    # reads param, grad, buf and writes param, buf: 5 * n * elem bytes; 4n FLOPs
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    buf = tl.load(buf_ptr + offs, mask=mask).to(tl.float32)
    buf = buf * momentum + g
    tl.store(buf_ptr + offs, buf.to(buf_ptr.dtype.element_ty), mask=mask)
    tl.store(p_ptr + offs, (p - lr * buf).to(p_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, lr: float, momentum: float):
        super().__init__()
        self.lr = lr
        self.momentum = momentum

    def forward(self, param: torch.Tensor, grad: torch.Tensor, momentum_buf: torch.Tensor) -> torch.Tensor:
        n = param.numel()
        _sgd_momentum_kernel[(triton.cdiv(n, 1024),)](param, grad, momentum_buf, n, self.lr, self.momentum,
                                                      BLOCK=1024)
        return param
