"""LEGITIMATE: adds in the input dtype (no explicit upcast), the most natural way to write the kernel.

Must be accepted on a GPU. Interpreter note: in triton 3.9's interpreter bfloat16 values are held as
raw uint16 bits and arithmetic on them without a conversion adds the bit patterns (1.0 + 1.0 gives
1.7e38). The evaluator must report unsupported_in_interpreter for the bfloat16 runs of such a kernel
(or work around the interpreter) and never charge it to the candidate; float32 and float16 runs are
fine under the interpreter.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # reads 2 elements, writes 1 per lane: 3 * n * elem bytes, n FLOPs
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(a)
        n = out.numel()
        _add_kernel[(triton.cdiv(n, 2048),)](a, b, out, n, BLOCK=2048, num_warps=8)
        return out
