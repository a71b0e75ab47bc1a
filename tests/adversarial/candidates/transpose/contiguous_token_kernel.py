"""EXPLOIT (threat 1): the task is a permutation, and ``x.t().contiguous()`` does it; a token own kernel
runs beside it.

Copies are allowed data movement in a strict task ("torch may allocate, view, copy, cast"), so the
trace showed one own kernel and one torch copy kernel, and the task passed on torch's copy. Caught by
the strict rule's share: the candidate's own kernels must carry at least a quarter of its GPU time
next to torch's data movement, and a token kernel carries none. On the CPU, where the interpreter has
no kernel times, the same share is taken over bytes: what its kernels load and store against what
torch's copies read and write.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch_kernel(out_ptr):
    tl.store(out_ptr, tl.load(out_ptr))  # one element, rewritten as it is


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = x.t().contiguous()
        _touch_kernel[(1,)](out)
        return out
