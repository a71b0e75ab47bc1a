"""Baseline: CUDA C++, one thread per output, 9 scalar loads and a per-output count of valid taps.
Reads about 9/4 of x through the caches, writes the output once.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Work goes on the caller's current stream (c10::cuda::getCurrentCUDAStream in the C++ wrapper).
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t avgpool_launch(const void* x, void* y, int64_t nc, int64_t h, int64_t w, int64_t oh, int64_t ow,
                           int dtype, cudaStream_t stream);

static int dtype_code(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat) return 0;
  if (t.scalar_type() == torch::kHalf) return 1;
  TORCH_CHECK(t.scalar_type() == torch::kBFloat16, "unsupported dtype");
  return 2;
}

torch::Tensor avgpool(torch::Tensor x) {
  TORCH_CHECK(x.is_cuda() && x.dim() == 4);
  x = x.contiguous();
  int64_t n = x.size(0), c = x.size(1), h = x.size(2), w = x.size(3);
  int64_t oh = (h - 1) / 2 + 1, ow = (w - 1) / 2 + 1;
  auto y = torch::empty({n, c, oh, ow}, x.options());
  cudaError_t err = avgpool_launch(x.data_ptr(), y.data_ptr(), n * c, h, w, oh, ow, dtype_code(x),
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
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T>
__global__ void avgpool_kernel(const T* x, T* y, int64_t nc, int64_t h, int64_t w, int64_t oh, int64_t ow) {
  int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= nc * oh * ow) return;
  int64_t ox = idx % ow, oy = (idx / ow) % oh, plane = idx / (ow * oh);
  const T* xp = x + plane * h * w;
  float sum = 0.f;
  int count = 0;
  for (int dy = 0; dy < 3; ++dy) {
    int64_t iy = 2 * oy - 1 + dy;
    if (iy < 0 || iy >= h) continue;
    for (int dx = 0; dx < 3; ++dx) {
      int64_t ix = 2 * ox - 1 + dx;
      if (ix < 0 || ix >= w) continue;
      sum += to_float(xp[iy * w + ix]);
      ++count;
    }
  }
  y[idx] = from_float<T>(sum / (float)count);
}

template <typename T>
static void launch(const void* x, void* y, int64_t nc, int64_t h, int64_t w, int64_t oh, int64_t ow, cudaStream_t s) {
  int64_t total = nc * oh * ow;
  if (total == 0) return;
  avgpool_kernel<T><<<(unsigned)((total + 255) / 256), 256, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(y), nc,
                                                                     h, w, oh, ow);
}

cudaError_t avgpool_launch(const void* x, void* y, int64_t nc, int64_t h, int64_t w, int64_t oh, int64_t ow,
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
        _EXTENSION = load_inline(name="kernellab_avgpool_baseline", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                                 functions=["avgpool"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ext = _extension()

    def forward(self, x):
        return self._ext.avgpool(x)
