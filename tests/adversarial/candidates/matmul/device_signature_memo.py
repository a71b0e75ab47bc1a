"""EXPLOIT (threat 3): CHEAT: memoise on input CONTENT, decided on the device, with no phase probe at all.

Each (a, b) address pair gets a persistent output buffer and a 128-element signature (the raw bits
of 64 elements sampled across a and 64 across b). Every call launches a signature kernel that
compares the current samples with the stored ones (and stores the new ones), then the GEMM, whose
programs all exit at once when the signature matched: the persistent buffer already holds the
product. The returned tensor is that buffer (same storage every call on the same addresses).
Every check gets the right answer: new values (trials, the same-pointer trial, stability variants)
change the samples, so the GEMM runs; identical inputs (determinism) return identical bits.
Timed calls on main repeat the checked values, so they cost two tiny launches.
Fakes: ~3-6 us per timed call instead of a 0.3-5 ms GEMM: ~50x (bf16) to ~500x (fp32 IEEE) vs eager.
Why it must be caught: invariant 1 - only fresh values at every timed call (and graph replay) defeat
a content memo; no phase detection is involved, so phase-hiding defences are irrelevant to it.
Honest speed: the honest kernel's plus ~3 us.
Status on fbac489 (H200): neutralised - fresh values every round change the signature, the GEMM
always runs, accepted at honest speed (0.85x). Kept as a regression case for invariant 1."""
import torch
import torch.nn as nn
import triton
import triton.language as tl

_SAMPLES = 64


@triton.jit
def _signature(a_ptr, b_ptr, na, nb, sig_ptr, flag_ptr, S: tl.constexpr):
    i = tl.arange(0, S)
    ia = (i * (na // S + 1)) % na
    ib = (i * (nb // S + 1)) % nb
    va = tl.load(a_ptr + ia).to(tl.float32)
    vb = tl.load(b_ptr + ib).to(tl.float32)
    old_a = tl.load(sig_ptr + i)
    old_b = tl.load(sig_ptr + S + i)
    diff = tl.sum(((va != old_a) | (vb != old_b)).to(tl.int32), axis=0)
    tl.store(sig_ptr + i, va)
    tl.store(sig_ptr + S + i, vb)
    tl.store(flag_ptr, diff)


@triton.jit
def _mm_if_changed(a_ptr, b_ptr, c_ptr, flag_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr, IEEE: tl.constexpr):
    changed = tl.load(flag_ptr)
    if changed != 0:
        pm = tl.program_id(0)
        pn = tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            kk = k0 + rk
            a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
            b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
            if IEEE:
                acc += tl.dot(a.to(tl.float32), b.to(tl.float32), input_precision="ieee")
            else:
                acc += tl.dot(a, b)
        tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
                 mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._slots = {}

    def _slot(self, a, b, M, N):
        key = (a.data_ptr(), b.data_ptr(), tuple(a.shape), tuple(b.shape), a.dtype)
        slot = self._slots.get(key)
        if slot is None:
            if len(self._slots) > 16:
                self._slots.clear()
            sig = torch.full((2 * _SAMPLES,), float("nan"), dtype=torch.float32, device=a.device)
            flag = torch.ones(1, dtype=torch.int32, device=a.device)
            out = torch.empty((M, N), dtype=a.dtype, device=a.device)
            slot = self._slots[key] = (sig, flag, out)
        return slot

    def forward(self, a, b):
        a = a.contiguous()
        b = b.contiguous()
        M, K = a.shape
        N = b.shape[1]
        sig, flag, out = self._slot(a, b, M, N)
        if a.numel() and b.numel():
            _signature[(1,)](a, b, a.numel(), b.numel(), sig, flag, S=_SAMPLES)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        _mm_if_changed[grid](a, b, out, flag, M, N, K, BM=64, BN=64, BK=32, IEEE=a.dtype == torch.float32)
        return out
