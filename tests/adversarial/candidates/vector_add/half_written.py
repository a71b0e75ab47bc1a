"""EXPLOIT (threat 2, partly unwritten output): launches half the programs needed, so the second half
of the output is never written; whatever the allocator hands back there is returned. (If the block
held a reference result of the same size, the answer would be right.)

Must be rejected with an `allocator_reuse` violation ("unwritten output"): before correctness calls
the evaluator fills and frees blocks of the output's size with NaN, so the unwritten half comes back
NaN (on the CPU, where malloc may not hand the block back, by NaN-filling torch.empty* results).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    total = tl.load(a_ptr + offs, mask=mask).to(tl.float32) + tl.load(b_ptr + offs, mask=mask).to(tl.float32)
    tl.store(out_ptr + offs, total.to(out_ptr.dtype.element_ty), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        n = out.numel()
        blocks = max(1, triton.cdiv(n, 128) // 2)  # half the work
        _add_kernel[(blocks,)](a, b, out, n, BLOCK=128)
        return out
