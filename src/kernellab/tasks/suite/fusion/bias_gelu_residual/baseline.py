"""Baseline: CUDA C++, one thread per element, scalar loads, the bias re-read through a modulo per
element. Reads x and residual once and writes y once (3 * M * N * elem); vector loads are left to gain.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Work goes on the caller's current stream (c10::cuda::getCurrentCUDAStream in the C++ wrapper).
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t bias_gelu_residual_launch(const void* x, const void* bias, const void* res, void* y, int64_t m, int64_t n,
                                      int dtype, cudaStream_t stream);

static int dtype_code(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat) return 0;
  if (t.scalar_type() == torch::kHalf) return 1;
  TORCH_CHECK(t.scalar_type() == torch::kBFloat16, "unsupported dtype");
  return 2;
}

torch::Tensor bias_gelu_residual(torch::Tensor x, torch::Tensor bias, torch::Tensor residual) {
  TORCH_CHECK(x.is_cuda() && x.dtype() == bias.dtype() && x.dtype() == residual.dtype() && x.dim() == 2);
  x = x.contiguous();
  bias = bias.contiguous();
  residual = residual.contiguous();
  auto y = torch::empty_like(x);
  cudaError_t err = bias_gelu_residual_launch(x.data_ptr(), bias.data_ptr(), residual.data_ptr(), y.data_ptr(),
                                              x.size(0), x.size(1), dtype_code(x),
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
__global__ void bias_gelu_residual_kernel(const T* x, const T* bias, const T* res, T* y, int64_t m, int64_t n) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= m * n) return;
  float h = to_float(x[i]) + to_float(bias[i % n]);
  float g = 0.5f * h * (1.f + erff(h * 0.70710678118654752f));
  y[i] = from_float<T>(to_float(res[i]) + g);
}

template <typename T>
static void launch(const void* x, const void* bias, const void* res, void* y, int64_t m, int64_t n, cudaStream_t s) {
  int64_t total = m * n;
  if (total == 0) return;
  bias_gelu_residual_kernel<T><<<(unsigned)((total + 255) / 256), 256, 0, s>>>(
      static_cast<const T*>(x), static_cast<const T*>(bias), static_cast<const T*>(res), static_cast<T*>(y), m, n);
}

cudaError_t bias_gelu_residual_launch(const void* x, const void* bias, const void* res, void* y, int64_t m, int64_t n,
                                      int dtype, cudaStream_t stream) {
  if (dtype == 0) launch<float>(x, bias, res, y, m, n, stream);
  else if (dtype == 1) launch<__half>(x, bias, res, y, m, n, stream);
  else launch<__nv_bfloat16>(x, bias, res, y, m, n, stream);
  return cudaGetLastError();
}
"""

_EXTENSION = None


def _extension():
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = load_inline(name="kernellab_bias_gelu_residual_baseline", cpp_sources=CPP_SOURCE,
                                 cuda_sources=CUDA_SOURCE, functions=["bias_gelu_residual"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self, features):
        super().__init__()
        self.bias = nn.Parameter(torch.zeros(features))
        self._ext = _extension()

    def forward(self, x, residual):
        return self._ext.bias_gelu_residual(x, self.bias, residual)
