"""Baseline: Triton, one GEMM kernel computing the (B x 4H) gate pre-activations into an fp32 buffer
(two K loops, over x and h), then an elementwise kernel for the cell update.

Unfused: 4*B*H fp32 gates written and read back; 8*B*(INPUT + HIDDEN)*HIDDEN FLOPs.
"""
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gates_kernel(x_ptr, h_ptr, wih_ptr, whh_ptr, bih_ptr, bhh_ptr, g_ptr, B, N, KI, KH,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PRECISION: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, KI, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(x_ptr + rm[:, None] * KI + rk[None, :], mask=(rm[:, None] < B) & (rk[None, :] < KI), other=0.0)
        w = tl.load(wih_ptr + rn[None, :] * KI + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < KI), other=0.0)
        acc += tl.dot(a, w, input_precision=PRECISION)
    for k0 in range(0, KH, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(h_ptr + rm[:, None] * KH + rk[None, :], mask=(rm[:, None] < B) & (rk[None, :] < KH), other=0.0)
        w = tl.load(whh_ptr + rn[None, :] * KH + rk[:, None], mask=(rn[None, :] < N) & (rk[:, None] < KH), other=0.0)
        acc += tl.dot(a, w, input_precision=PRECISION)
    acc += tl.load(bih_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    acc += tl.load(bhh_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)[None, :]
    tl.store(g_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < B) & (rn[None, :] < N))


@triton.jit
def _tanh(x):
    return 2.0 * tl.sigmoid(2.0 * x) - 1.0


@triton.jit
def _cell_kernel(g_ptr, c_ptr, h_out_ptr, c_out_ptr, H, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    mask = cols < H
    base = g_ptr + row * 4 * H
    i = tl.load(base + cols, mask=mask, other=0.0)
    f = tl.load(base + H + cols, mask=mask, other=0.0)
    g = tl.load(base + 2 * H + cols, mask=mask, other=0.0)
    o = tl.load(base + 3 * H + cols, mask=mask, other=0.0)
    c = tl.load(c_ptr + row * H + cols, mask=mask, other=0.0).to(tl.float32)
    c_next = tl.sigmoid(f) * c + tl.sigmoid(i) * _tanh(g)
    h_next = tl.sigmoid(o) * _tanh(c_next)
    tl.store(c_out_ptr + row * H + cols, c_next.to(c_out_ptr.dtype.element_ty), mask=mask)
    tl.store(h_out_ptr + row * H + cols, h_next.to(h_out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size):
        super().__init__()
        self.ih = nn.Linear(input_size, 4 * hidden_size)
        self.hh = nn.Linear(hidden_size, 4 * hidden_size)

    def forward(self, x, h, c):
        x, h, c = x.contiguous(), h.contiguous(), c.contiguous()
        B, KI = x.shape
        H = h.shape[1]
        gates = torch.empty((B, 4 * H), device=x.device, dtype=torch.float32)
        _gates_kernel[(triton.cdiv(B, 32), triton.cdiv(4 * H, 32))](
            x, h, self.ih.weight, self.hh.weight, self.ih.bias, self.hh.bias, gates, B, 4 * H, KI, H,
            BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, PRECISION="ieee" if x.dtype == torch.float32 else "tf32")
        h_next = torch.empty_like(h)
        c_next = torch.empty_like(c)
        _cell_kernel[(B, triton.cdiv(H, 256))](gates, c, h_next, c_next, H, BLOCK=256)
        return h_next, c_next
