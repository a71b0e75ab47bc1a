"""Baseline: three Triton passes instead of one: (1) decay the parameter, (2) update both moments,
(3) apply the step. Each pass re-reads what it needs: 12 * 4 * NUMEL bytes instead of the 7 * 4 * NUMEL
minimum of a single fused pass. 1 - beta is formed on the host: in float32 on the device, 1 - 0.999 keeps only four correct digits.
"""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _decay_kernel(p_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    tl.store(p_ptr + offs, p * factor, mask=mask)


@triton.jit
def _moments_kernel(g_ptr, m_ptr, v_ptr, n, one_minus_beta1, beta2, one_minus_beta2, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask)
    m = tl.load(m_ptr + offs, mask=mask)
    v = tl.load(v_ptr + offs, mask=mask)
    tl.store(m_ptr + offs, m + one_minus_beta1 * (g - m), mask=mask)
    tl.store(v_ptr + offs, beta2 * v + one_minus_beta2 * g * g, mask=mask)


@triton.jit
def _apply_kernel(p_ptr, m_ptr, v_ptr, n, step_size, inv_sqrt_bc2, eps, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    m = tl.load(m_ptr + offs, mask=mask)
    v = tl.load(v_ptr + offs, mask=mask)
    tl.store(p_ptr + offs, p - step_size * m / (tl.sqrt(v) * inv_sqrt_bc2 + eps), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, lr, beta1, beta2, eps, weight_decay, step):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.weight_decay, self.step = weight_decay, step

    def forward(self, param, grad, exp_avg, exp_avg_sq):
        n = param.numel()
        grid = (triton.cdiv(n, 1024),)
        _decay_kernel[grid](param, n, 1.0 - self.lr * self.weight_decay, BLOCK=1024)
        _moments_kernel[grid](grad, exp_avg, exp_avg_sq, n, 1.0 - self.beta1, self.beta2, 1.0 - self.beta2,
                              BLOCK=1024)
        bc1 = 1 - self.beta1 ** self.step
        bc2 = 1 - self.beta2 ** self.step
        _apply_kernel[grid](param, exp_avg, exp_avg_sq, n, self.lr / bc1, 1.0 / math.sqrt(bc2), self.eps, BLOCK=1024)
