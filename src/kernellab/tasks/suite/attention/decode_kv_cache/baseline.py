"""Baseline: a Triton flash-attention forward used as is for decode: one program per (batch, head)
with a 16-row query tile of which only row 0 is real, looping over the whole cache.

Reads the KV cache once (2*B*H*S*D elements) but with one program per head and 15/16 of the
query tile wasted; splitting the key axis across programs (flash-decoding) is the obvious fix.
"""
import math

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, Lq, Lk, D, scale,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_D: tl.constexpr, PRECISION: tl.constexpr):
    bh = tl.program_id(0)
    rm = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    rd = tl.arange(0, BLOCK_D)
    q = tl.load(q_ptr + bh * Lq * D + rm[:, None] * D + rd[None, :], mask=(rm[:, None] < Lq) & (rd[None, :] < D),
                other=0.0)
    m_i = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    l_i = tl.zeros((BLOCK_M,), tl.float32)
    acc = tl.zeros((BLOCK_M, BLOCK_D), tl.float32)
    for n0 in range(0, Lk, BLOCK_N):
        rn = n0 + tl.arange(0, BLOCK_N)
        kt = tl.load(k_ptr + bh * Lk * D + rn[None, :] * D + rd[:, None], mask=(rn[None, :] < Lk) & (rd[:, None] < D),
                     other=0.0)
        s = tl.dot(q, kt, input_precision=PRECISION) * scale
        s = tl.where(rn[None, :] < Lk, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp(s - m_safe[:, None])
        alpha = tl.exp(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + bh * Lk * D + rn[:, None] * D + rd[None, :], mask=(rn[:, None] < Lk) & (rd[None, :] < D),
                    other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision=PRECISION)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + bh * Lq * D + rm[:, None] * D + rd[None, :], acc.to(o_ptr.dtype.element_ty),
             mask=(rm[:, None] < Lq) & (rd[None, :] < D))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, q, k_cache, v_cache):
        q, k_cache, v_cache = q.contiguous(), k_cache.contiguous(), v_cache.contiguous()
        B, H, Lq, D = q.shape
        S = k_cache.shape[2]
        o = torch.empty_like(q)
        block_d = max(16, triton.next_power_of_2(D))
        _attn_fwd[(B * H, triton.cdiv(Lq, 16))](q, k_cache, v_cache, o, Lq, S, D, 1.0 / math.sqrt(D),
                                                BLOCK_M=16, BLOCK_N=64, BLOCK_D=block_d,
                                                PRECISION="ieee" if q.dtype == torch.float32 else "tf32")
        return o
