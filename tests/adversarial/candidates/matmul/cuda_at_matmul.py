"""EXPLOIT (threat 1, library op hidden in C++): a CUDA extension whose "kernel" is a call to
at::matmul (cuBLAS). No torch compute call appears in the Python source, and a compiled extension
does run.

GPU-only: must be rejected with a `policy` violation from the profiler trace, which shows a cuBLAS
GEMM kernel (checked on an H100: sm80_xmma_gemm_f32f32_...) next to the candidate's own trivial
kernel. A C++ scan that flags ATen/torch compute calls (at::matmul, torch::mm, cublas*) would also
catch it before compiling; without a GPU the verdict is then `failed` at `static`, otherwise
needs_gpu.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = "torch::Tensor gemm(torch::Tensor a, torch::Tensor b);"

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void touch_kernel(float* flag) { *flag = 1.0f; }

torch::Tensor gemm(torch::Tensor a, torch::Tensor b) {
  auto flag = torch::empty({1}, a.options().dtype(torch::kFloat32));
  touch_kernel<<<1, 1, 0, at::cuda::getCurrentCUDAStream()>>>(flag.data_ptr<float>());
  return at::matmul(a, b);
}
"""

_ext = load_inline(name="kernellab_adversarial_cuda_at_matmul", cpp_sources=_CPP, cuda_sources=_CUDA,
                   functions=["gemm"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _ext.gemm(a, b)
