"""Baseline: CUDA C++, one thread per output, 9 scalar loads each (neighbouring outputs re-read the
shared window row). Reads about 9/4 of x through the caches, writes the output once.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Work goes on the caller's current stream (c10::cuda::getCurrentCUDAStream in the C++ wrapper).
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t maxpool_launch(const void* x, void* y, int64_t nc, int64_t h, int64_t w, int64_t oh, int64_t ow,
                           int dtype, cudaStream_t stream);

static int dtype_code(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat) return 0;
  if (t.scalar_type() == torch::kHalf) return 1;
  TORCH_CHECK(t.scalar_type() == torch::kBFloat16, "unsupported dtype");
  return 2;
}

torch::Tensor maxpool(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 4);
  x = x.contiguous();
  int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  int64_t oh = (h - 1) / 2 + 1, ow = (w - 1) / 2 + 1;
  auto y = torch::empty({n, c, oh, ow}, x.options());
  cudaError_t err = maxpool_launch(x.data_ptr(), y.data_ptr(), n * c, h, w, oh, ow, dtype_code(x),
                                   c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, cudaGetErrorString(err));
  return y;
}
"""

CUDA_SOURCE = r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

// 3x3 window, stride 2, padding 1; the max of values of type T is one of them, stored back unchanged
template <typename T>
__global__ void maxpool_kernel(const T* x, T* y, int64_t nc, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= nc * oh * ow) return;
  int64_t ox = idx % ow, oy = (idx / ow) % oh, plane = idx / (ow * oh);
  const T* xp = x + plane * h * w;
  T best = xp[0];
  float best_f = -INFINITY;
  bool seen = false;
  for (int dy = 0; dy < 3; ++dy) {
    int64_t iy = 2 * oy - 1 + dy;
    if (iy < 0 || iy >= h) continue;
    for (int dx = 0; dx < 3; ++dx) {
      int64_t ix = 2 * ox - 1 + dx;
      if (ix < 0 || ix >= w) continue;
      T v = xp[iy * w + ix];
      float f = to_float(v);
      if (!seen || f > best_f || f != f) { best = v; best_f = f; seen = true; }
      if (f != f) { y[idx] = v; return; }  // NaN propagates, as in PyTorch
    }
  }
  y[idx] = best;
}

template <typename T>
static void launch(const void* x, void* y, int64_t nc, int64_t h, int64_t w, int64_t oh, int64_t ow, cudaStream_t s) {
  int64_t total = nc * oh * ow;
  if (total == 0) return;
  maxpool_kernel<T><<<(unsigned)((total + 255) / 256), 256, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), nc,
                                                                     h, w, oh, ow);
}

cudaError_t maxpool_launch(const void* x, void* y, int64_t nc, int64_t h, int64_t w, int64_t oh, int64_t ow,
                           int dtype, cudaStream_t stream) {
  if (dtype == 0) launch<float>(x, y, nc, h, w, oh, ow, stream);
  else if (dtype == 1) launch<__half>(x, y, nc, h, w, oh, ow, stream);
  else launch<__nv_bfloat16>(x, y, nc, h, w, oh, ow, stream);
  return cudaGetLastError();
}
"""

_EXTENSION = None


def _extension():
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = load_inline(name="kernellab_maxpool_baseline", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                                 functions=["maxpool"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ext = _extension()

    def forward(self, x):
        return self._ext.maxpool(x)
