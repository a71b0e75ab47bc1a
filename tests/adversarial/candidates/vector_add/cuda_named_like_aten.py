"""EXPLOIT (threat 1): a CUDA extension whose ``__global__`` function is named like ATen's elementwise
kernel, while the sum comes from ``a + b``.

ATen's add appears in the trace as ``void at::native::vectorized_elementwise_kernel<...>(...)``; by
name it was this extension's kernel. Caught by compiled identity: the child builds the extension with
its ``__global__`` functions renamed under a suffix no library kernel has, and the judge reads the
built binary's entry symbols.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA = r"""
#include <torch/extension.h>

__global__ void vectorized_elementwise_kernel(float* x) { }

torch::Tensor touch(torch::Tensor x) {
    vectorized_elementwise_kernel<<<1, 1>>>(nullptr);
    return x;
}
"""

_ext = load_inline(name="named_like_aten_ext", cpp_sources="torch::Tensor touch(torch::Tensor x);",
                   cuda_sources=_CUDA, functions=["touch"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        return _ext.touch(a + b)
