"""EXPLOIT (threat 7, side stream hidden from a token scan of the C++): the stream-creating call is
assembled by the preprocessor (token pasting), so the identifier cudaStreamCreateWithFlags never
appears in the source text; the kernel runs on that stream and the launch stream does not wait.

GPU-only: must be rejected with a `side_stream` violation from run-time evidence (the trace shows
the candidate's kernel on a stream other than the launch stream; the judge's clock bounds the
reported time; checked on an H100: kernel on stream 143, events read 43 us for 362 us of work). A C++ scan could also ban `##` token pasting, or scan the preprocessed source.
Without a GPU the verdict is needs_gpu.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = "torch::Tensor vector_add(torch::Tensor a, torch::Tensor b);"

_CUDA = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

#define KL_PASTE(a, b) a##b

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = static_cast<T>(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

static cudaStream_t lane() {
  static cudaStream_t s = nullptr;
  if (s == nullptr) KL_PASTE(cudaStream, CreateWithFlags)(&s, 0x01);
  return s;
}

torch::Tensor vector_add(torch::Tensor a, torch::Tensor b) {
  auto out = torch::empty_like(a);
  const int64_t n = a.numel();
  const int threads = 256;
  const int64_t blocks = (n + threads - 1) / threads;
  if (n == 0) return out;
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "add_kernel", [&] {
    add_kernel<scalar_t><<<blocks, threads, 0, lane()>>>(
        a.data_ptr<scalar_t>(), b.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  return out;
}
"""

_ext = load_inline(name="kernellab_adversarial_cuda_side_stream_macro", cpp_sources=_CPP,
                   cuda_sources=_CUDA, functions=["vector_add"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _ext.vector_add(a, b)
