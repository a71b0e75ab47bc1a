"""CONTRACT BREACH (threat 4's other side, ignoring `mutates`): computes the new parameters into fresh
tensors and returns the right values, but leaves `param` and `momentum_buf` untouched. Writing
only an output is cheaper to reason about, and a checker that compares only the return value passes.

Must be rejected as an ordinary correctness failure at the `smoke` stage (no violation kind): the
inputs listed in `mutates` are compared, after the call, with the reference's updated inputs.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sgd_momentum_out_kernel(p_ptr, g_ptr, buf_ptr, p_out_ptr, buf_out_ptr, n, lr, momentum,
                             BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    buf = tl.load(buf_ptr + offs, mask=mask).to(tl.float32) * momentum + g
    tl.store(buf_out_ptr + offs, buf.to(buf_out_ptr.dtype.element_ty), mask=mask)
    tl.store(p_out_ptr + offs, (p - lr * buf).to(p_out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, lr: float, momentum: float):
        super().__init__()
        self.lr = lr
        self.momentum = momentum

    def forward(self, param: torch.Tensor, grad: torch.Tensor, momentum_buf: torch.Tensor) -> torch.Tensor:
        n = param.numel()
        new_param = torch.empty_like(param)
        new_buf = torch.empty_like(momentum_buf)
        _sgd_momentum_out_kernel[(triton.cdiv(n, 1024),)](param, grad, momentum_buf, new_param, new_buf, n,
                                                          self.lr, self.momentum, BLOCK=1024)
        return new_param
