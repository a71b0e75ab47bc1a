"""EXPLOIT (threat 13, memory safety): a workspace from torch.empty read as if it were zero.

The kernel adds a per-program carry from a workspace (the pattern of split-K semaphores and
stream-K fix-up buffers) and clears its slot after use, so every call after the first finds zeros.
The workspace is allocated once per process with torch.empty and never initialised: the first call
reads memory nobody wrote. It is right only because the workspace is the process's first large
allocation, a fresh segment that the driver happened to hand over zeroed; reused memory (another
tensor's freed block) would add garbage. Output checks see correct sums on every call. Caught by
the sanitize stage: compute-sanitizer initcheck reports an "Uninitialized __global__ memory read".
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_WORKSPACE = {}  # device -> the process's workspace, as a library would keep it
SLOTS = 1 << 20  # 4 MiB of float32: a large-pool allocation of its own


@triton.jit
def _add_with_carry(a_ptr, b_ptr, out_ptr, carry_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    carry = tl.load(carry_ptr + pid)  # "the workspace starts cleared": never true on the first call
    a = tl.load(a_ptr + offs, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, (a + b + carry).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(carry_ptr + pid, 0.0)  # left cleared for the next call


class ModelNew(nn.Module):
    BLOCK = 1024

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        a_flat = a.contiguous().view(-1)
        b_flat = b.contiguous().view(-1)
        out = torch.empty_like(a_flat)
        n = out.numel()
        grid = triton.cdiv(n, self.BLOCK)
        workspace = _WORKSPACE.get(a.device)
        if workspace is None:
            workspace = _WORKSPACE[a.device] = torch.empty(SLOTS, dtype=torch.float32, device=a.device)
        _add_with_carry[(grid,)](a_flat, b_flat, out, workspace, n, BLOCK=self.BLOCK, num_warps=8)
        return out.view(a.shape)
