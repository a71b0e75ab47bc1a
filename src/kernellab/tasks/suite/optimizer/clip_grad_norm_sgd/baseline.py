"""Baseline: Triton, five launches: per-block partial sums of squares for each
gradient into a buffer, the clip coefficient computed in a one-program kernel, then one scale-and-step
kernel per tensor. Gradients are read twice (norm, update).
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _sumsq_kernel(g_ptr, partial_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    g = tl.load(g_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(partial_ptr + pid, tl.sum(g * g, 0))


@triton.jit
def _coef_kernel(partial_ptr, count, coef_ptr, max_norm, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), tl.float32)
    for i0 in range(0, count, BLOCK):
        offs = i0 + tl.arange(0, BLOCK)
        acc += tl.load(partial_ptr + offs, mask=offs < count, other=0.0)
    total = tl.sqrt(tl.sum(acc, 0))
    tl.store(coef_ptr, tl.minimum(max_norm / (total + 1e-6), 1.0))


@triton.jit
def _clip_step_kernel(p_ptr, g_ptr, coef_ptr, n, lr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    coef = tl.load(coef_ptr)
    g = tl.load(g_ptr + offs, mask=mask).to(tl.float32) * coef
    p = tl.load(p_ptr + offs, mask=mask).to(tl.float32)
    tl.store(g_ptr + offs, g.to(g_ptr.dtype.element_ty), mask=mask)
    tl.store(p_ptr + offs, (p - lr * g).to(p_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, lr, max_norm):
        super().__init__()
        self.lr, self.max_norm = lr, max_norm

    def forward(self, weight, weight_grad, bias, bias_grad):
        block = 1024
        nw, nb = weight_grad.numel(), bias_grad.numel()
        bw, bb = triton.cdiv(nw, block), triton.cdiv(nb, block)
        partial = torch.empty(bw + bb, device=weight.device, dtype=torch.float32)
        _sumsq_kernel[(bw,)](weight_grad, partial, nw, BLOCK=block)
        _sumsq_kernel[(bb,)](bias_grad, partial[bw:], nb, BLOCK=block)
        coef = torch.empty(1, device=weight.device, dtype=torch.float32)
        _coef_kernel[(1,)](partial, bw + bb, coef, self.max_norm, BLOCK=1024)
        _clip_step_kernel[(bw,)](weight, weight_grad, coef, nw, self.lr, BLOCK=block)
        _clip_step_kernel[(bb,)](bias, bias_grad, coef, nb, self.lr, BLOCK=block)
