"""EXPLOIT (threat 1): a ``@triton.jit`` function named like ATen's elementwise kernel, while the sum
comes from ``a + b``.

ATen's add runs as ``void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>,
...>(...)`` on the GPU: its function name is ``vectorized_elementwise_kernel``, the same as this
candidate's Triton function. Recognising own kernels by name counted torch's kernel as the
candidate's, and the strict task passed on a library kernel. Caught by compiled identity: the
candidate's kernels compile under a suffix no library kernel carries, and the judge finds them in
the child's Triton cache; on the CPU the op log sees ``aten.add``.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def vectorized_elementwise_kernel(out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=mask), mask=mask)  # a token: rewrites what is there


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        out = a + b
        vectorized_elementwise_kernel[(1,)](out, 1, BLOCK=16)
        return out
