"""EXPLOIT (threat 4): an updated-in-place input left empty. The kernel updates param but leaves
momentum_buf's work undone and resizes momentum_buf to (0, P): compared as it was left, an empty
tensor broadcast against the reference holds no error.

Must be rejected: the judge reads updated inputs as they were handed over, and a call that changes
an input's size, strides or memory breaks the output contract.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _param_only_kernel(p_ptr, g_ptr, buf_ptr, n, lr, momentum, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    buf = tl.load(buf_ptr + offs, mask=mask).to(tl.float32) * momentum + g
    tl.store(p_ptr + offs, (p - lr * buf).to(p_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, lr: float, momentum: float):
        super().__init__()
        self.lr = lr
        self.momentum = momentum

    def forward(self, param: torch.Tensor, grad: torch.Tensor, momentum_buf: torch.Tensor) -> torch.Tensor:
        n = param.numel()
        _param_only_kernel[(triton.cdiv(n, 1024),)](param, grad, momentum_buf, n, self.lr, self.momentum,
                                                    BLOCK=1024)
        momentum_buf.resize_(0, n)
        return param
