"""Baseline: CUDA C++, one thread per output element computing its source with 64-bit divisions;
writes are coalesced, reads are strided by H*W across R*R channels. Reads and writes every element once.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Work goes on the caller's current stream (c10::cuda::getCurrentCUDAStream in the C++ wrapper).
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t pixel_shuffle_launch(const void* x, void* y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t r,
                                 int elem_bytes, cudaStream_t stream);

torch::Tensor pixel_shuffle(torch::Tensor x, int64_t r) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 4 && x.size(1) % (r * r) == 0);
  x = x.contiguous();
  int64_t n = x.size(0), c = x.size(1) / (r * r), h = x.size(2), w = x.size(3);
  auto y = torch::empty({n, c, h * r, w * r}, x.options());
  cudaError_t err = pixel_shuffle_launch(x.data_ptr(), y.data_ptr(), n, c, h, w, r, (int)x.element_size(),
                                         c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, cudaGetErrorString(err));
  return y;
}
"""

CUDA_SOURCE = r"""
#include <cuda_runtime.h>
#include <cstdint>

// Moves raw 2- or 4-byte elements: bit-exact for every dtype.
template <typename T>
__global__ void pixel_shuffle_kernel(const T* x, T* y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t r) {
  int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  int64_t oh = h * r, ow = w * r;
  if (idx >= n * c * oh * ow) return;
  int64_t ox = idx % ow, oy = (idx / ow) % oh, ch = (idx / (ow * oh)) % c, img = idx / (ow * oh * c);
  int64_t src_c = ch * r * r + (oy % r) * r + (ox % r);
  y[idx] = x[((img * c * r * r + src_c) * h + oy / r) * w + ox / r];
}

cudaError_t pixel_shuffle_launch(const void* x, void* y, int64_t n, int64_t c, int64_t h, int64_t w, int64_t r,
                                 int elem_bytes, cudaStream_t stream) {
  int64_t total = n * c * h * r * w * r;
  if (total > 0) {
    unsigned blocks = (unsigned)((total + 255) / 256);
    if (elem_bytes == 4)
      pixel_shuffle_kernel<uint32_t><<<blocks, 256, 0, stream>>>(static_cast<const uint32_t*>(x),
                                                                 static_cast<uint32_t*>(y), n, c, h, w, r);
    else
      pixel_shuffle_kernel<uint16_t><<<blocks, 256, 0, stream>>>(static_cast<const uint16_t*>(x),
                                                                 static_cast<uint16_t*>(y), n, c, h, w, r);
  }
  return cudaGetLastError();
}
"""

_EXTENSION = None


def _extension():
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = load_inline(name="kernellab_pixel_shuffle_baseline", cpp_sources=CPP_SOURCE,
                                 cuda_sources=CUDA_SOURCE, functions=["pixel_shuffle"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self, upscale):
        super().__init__()
        self.upscale = upscale
        self._ext = _extension()

    def forward(self, x):
        return self._ext.pixel_shuffle(x, self.upscale)
