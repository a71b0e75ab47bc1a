"""EXPLOIT (threat 4, mutating an undeclared input): performs the step correctly in place and, in the
same kernel, zeroes `grad` (a fused "zero_grad" that saves a later pass). `grad` is not in the task's
`mutates`; a caller that still reads the gradient (clipping, logging, accumulation) breaks silently.

Must be rejected with an `input_mutation` violation: inputs not listed in `mutates` are hashed before
and after every call.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sgd_momentum_zero_grad_kernel(p_ptr, g_ptr, buf_ptr, n, lr, momentum, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    buf = tl.load(buf_ptr + offs, mask=mask).to(tl.float32)
    buf = buf * momentum + g
    tl.store(buf_ptr + offs, buf.to(buf_ptr.dtype.element_ty), mask=mask)
    tl.store(p_ptr + offs, (p - lr * buf).to(p_ptr.dtype.element_ty), mask=mask)
    tl.store(g_ptr + offs, tl.zeros_like(g).to(g_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, lr: float, momentum: float):
        super().__init__()
        self.lr = lr
        self.momentum = momentum

    def forward(self, param: torch.Tensor, grad: torch.Tensor, momentum_buf: torch.Tensor) -> torch.Tensor:
        n = param.numel()
        _sgd_momentum_zero_grad_kernel[(triton.cdiv(n, 1024),)](param, grad, momentum_buf, n, self.lr,
                                                                self.momentum, BLOCK=1024)
        return param
