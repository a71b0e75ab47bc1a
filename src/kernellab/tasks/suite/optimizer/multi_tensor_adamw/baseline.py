"""Baseline: Triton, one fused AdamW kernel launched separately for each of the three tensors
(three launches; the bias launch is pure overhead). 7 * 4 bytes per element, the minimum traffic.
"""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _adamw_kernel(p_ptr, g_ptr, m_ptr, v_ptr, n, decay, one_minus_beta1, beta2, one_minus_beta2, step_size, inv_sqrt_bc2, eps,
                  BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    p = tl.load(p_ptr + offs, mask=mask)
    g = tl.load(g_ptr + offs, mask=mask)
    m = tl.load(m_ptr + offs, mask=mask)
    v = tl.load(v_ptr + offs, mask=mask)
    m = m + one_minus_beta1 * (g - m)
    v = beta2 * v + one_minus_beta2 * g * g
    p = p * decay - step_size * m / (tl.sqrt(v) * inv_sqrt_bc2 + eps)
    tl.store(m_ptr + offs, m, mask=mask)
    tl.store(v_ptr + offs, v, mask=mask)
    tl.store(p_ptr + offs, p, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, lr, beta1, beta2, eps, weight_decay, step):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps = lr, beta1, beta2, eps
        self.weight_decay, self.step = weight_decay, step

    def forward(self, w, w_grad, w_exp_avg, w_exp_avg_sq, b, b_grad, b_exp_avg, b_exp_avg_sq,
                emb, emb_grad, emb_exp_avg, emb_exp_avg_sq):
        bc1 = 1 - self.beta1 ** self.step
        bc2 = 1 - self.beta2 ** self.step
        groups = ((w, w_grad, w_exp_avg, w_exp_avg_sq), (b, b_grad, b_exp_avg, b_exp_avg_sq),
                  (emb, emb_grad, emb_exp_avg, emb_exp_avg_sq))
        for p, g, m, v in groups:
            n = p.numel()
            _adamw_kernel[(triton.cdiv(n, 1024),)](p, g, m, v, n, 1.0 - self.lr * self.weight_decay,
                                                   1.0 - self.beta1, self.beta2, 1.0 - self.beta2, self.lr / bc1, 1.0 / math.sqrt(bc2), self.eps,
                                                   BLOCK=1024)
