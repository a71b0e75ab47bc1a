"""Baseline: CUDA C++, one thread per output element with 64-bit index arithmetic (divisions and
modulos per element), scalar loads and stores. Reads x (through the caches, each input 4 times),
writes 4 * N * C * H * W elements.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Work goes on the caller's current stream (c10::cuda::getCurrentCUDAStream in the C++ wrapper).
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t nearest2x_launch(const void* x, void* y, int64_t planes, int64_t h, int64_t w, int elem_bytes,
                             cudaStream_t stream);

torch::Tensor nearest2x(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 4);
  x = x.contiguous();
  auto y = torch::empty({x.size(0), x.size(1), 2 * x.size(2), 2 * x.size(3)}, x.options());
  cudaError_t err = nearest2x_launch(x.data_ptr(), y.data_ptr(), x.size(0) * x.size(1), x.size(2), x.size(3),
                                     (int)x.element_size(), c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, cudaGetErrorString(err));
  return y;
}
"""

CUDA_SOURCE = r"""
#include <cuda_runtime.h>
#include <cstdint>

// Copies raw elements (2 or 4 bytes), so the result is bit-exact for every dtype.
template <typename T>
__global__ void nearest2x_kernel(const T* x, T* y, int64_t planes, int64_t h, int64_t w) {
  int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t oh = 2 * h, ow = 2 * w;
  if (idx >= planes * oh * ow) return;
  int64_t ox = idx % ow, oy = (idx / ow) % oh, plane = idx / (ow * oh);
  y[idx] = x[(plane * h + oy / 2) * w + ox / 2];
}

cudaError_t nearest2x_launch(const void* x, void* y, int64_t planes, int64_t h, int64_t w, int elem_bytes,
                             cudaStream_t stream) {
  int64_t total = planes * 4 * h * w;
  if (total > 0) {
    unsigned blocks = (unsigned)((total + 255) / 256);
    if (elem_bytes == 4)
      nearest2x_kernel<uint32_t><<<blocks, 256, 0, stream>>>(static_cast<const uint32_t*>(x),
                                                             static_cast<uint32_t*>(y), planes, h, w);
    else
      nearest2x_kernel<uint16_t><<<blocks, 256, 0, stream>>>(static_cast<const uint16_t*>(x),
                                                             static_cast<uint16_t*>(y), planes, h, w);
  }
  return cudaGetLastError();
}
"""

_EXTENSION = None


def _extension():
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = load_inline(name="kernellab_nearest2x_baseline", cpp_sources=CPP_SOURCE,
                                 cuda_sources=CUDA_SOURCE, functions=["nearest2x"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ext = _extension()

    def forward(self, x):
        return self._ext.nearest2x(x)
