"""EXPLOIT (threat 7, side stream from C++): the CUDA extension creates its own non-blocking stream
and launches there without making the current stream wait, so events recorded on the launch stream
around the call measure nothing.

Must be rejected with a `side_stream` violation. The C++ side of the static scan sees
cudaStreamCreate*, which runs before anything is compiled, so this shows on a machine without a GPU
too; on a GPU the trace also shows the kernel on a stream other than the launch stream (checked
on an H100: the kernel ran on stream 142, and events on the launch stream read 82 us for 408 us).
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = "torch::Tensor add(torch::Tensor a, torch::Tensor b);"

_CUDA = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

static cudaStream_t side_stream() {
  static cudaStream_t s = nullptr;
  if (s == nullptr) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  return s;
}

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
  auto out = torch::empty_like(a);
  const int64_t n = a.numel();
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  if (n == 0) return out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "add_kernel", [&] {
    add_kernel<scalar_t><<<blocks, threads, 0, side_stream()>>>(
        a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  return out;  // no cudaStreamSynchronize, no event: the launch stream does not wait
}
"""

_ext = load_inline(name="kernellab_adversarial_cuda_side_stream", cpp_sources=_CPP, cuda_sources=_CUDA,
                   functions=["add"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _ext.add(a, b)
