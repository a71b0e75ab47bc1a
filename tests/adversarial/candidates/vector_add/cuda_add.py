"""LEGITIMATE (CUDA C++): an elementwise kernel compiled with load_inline, launched on the current
stream, output from torch::empty_like fully written.

Must be accepted on a GPU; on a machine without one the verdict is needs_gpu (never failed).
Guards against false positives of the C++ side of the static scan (threats 1 and 7: using the
current stream and torch::empty_like are allowed) and of the policy trace (the kernel must be
attributed to the candidate's compiled source). The extension's function is called `add` on
purpose: `_ext.add(a, b)` is a call into the candidate's own extension, not the tensor method.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = "torch::Tensor add(torch::Tensor a, torch::Tensor b);"

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

template <typename T>
__global__ void add_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                           int64_t n) {
  // reads 2 elements, writes 1 per thread: 3 * n * elem bytes, n FLOPs
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda(), "inputs must be CUDA tensors");
  auto a_c = a.contiguous();
  auto b_c = b.contiguous();
  auto out = torch::empty_like(a_c);
  const int64_t n = a_c.numel();
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  if (n == 0) return out;
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a_c.scalar_type(), "add_kernel", [&] {
    add_kernel<scalar_t><<<blocks, threads, 0, stream>>>(
        a_c.data_ptr<scalar_t>(), b_c.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
"""

_ext = load_inline(name="kernellab_adversarial_cuda_add", cpp_sources=_CPP, cuda_sources=_CUDA,
                   functions=["add"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _ext.add(a, b)
