"""EXPLOIT (threat 1): the ``@triton.jit`` body calls torch on host tensors it reaches through a global.

Under the Triton interpreter a jit body is plain Python, so ``_HOST["out"].copy_(_HOST["a"] +
_HOST["b"])`` runs torch's add on the host while "the kernel" executes; the op log used to skip every
aten op issued during an interpreted launch (the interpreter's own copies). Caught by where the op
came from: inside a launch, an op is the interpreter's only if Triton's own code issued it; this one
comes from the candidate's body. No GPU build compiles it (a plain failure there).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl

_HOST = {}


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    _HOST["out"].copy_(_HOST["a"] + _HOST["b"])


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        out = torch.empty_like(a)
        _HOST["a"], _HOST["b"], _HOST["out"] = a, b, out
        _add_kernel[(1,)](a, b, out, out.numel(), BLOCK=16)
        return out
