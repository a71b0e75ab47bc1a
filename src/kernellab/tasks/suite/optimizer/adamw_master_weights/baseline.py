"""Baseline: Triton, two passes: (1) moments and master update, (2) a separate cast-and-copy of the
master into the low-precision param, re-reading the master (an extra 4 * NUMEL bytes of traffic).
"""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _master_step_kernel(g_ptr, w_ptr, m_ptr, v_ptr, n, decay, one_minus_beta1, beta2, one_minus_beta2, step_size, inv_sqrt_bc2, eps,
                        BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask)
    m = tl.load(m_ptr + offs, mask=mask)
    v = tl.load(v_ptr + offs, mask=mask)
    m = m + one_minus_beta1 * (g - m)
    v = beta2 * v + one_minus_beta2 * g * g
    w = w * decay - step_size * m / (tl.sqrt(v) * inv_sqrt_bc2 + eps)
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)
    tl.store(w_ptr + offs, w, mask=mask)


@triton.jit
def _copy_kernel(w_ptr, p_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(p_ptr + offs, tl.load(w_ptr + offs, mask=mask).to(p_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, lr, beta1, beta2, eps, weight_decay, step):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.weight_decay, self.step = weight_decay, step

    def forward(self, param, grad, master, exp_avg, exp_avg_sq):
        n = param.numel()
        grid = (triton.cdiv(n, 1024),)
        bc1 = 1 - self.beta1 ** self.step
        bc2 = 1 - self.beta2 ** self.step
        _master_step_kernel[grid](grad, master, exp_avg, exp_avg_sq, n, 1.0 - self.lr * self.weight_decay,
                                  1.0 - self.beta1, self.beta2, 1.0 - self.beta2, self.lr / bc1, 1.0 / math.sqrt(bc2), self.eps, BLOCK=1024)
        _copy_kernel[grid](master, param, n, BLOCK=1024)
