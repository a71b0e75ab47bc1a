"""Baseline: CUDA C++ 16x16 shared-memory tiled GEMM (fp32 FMA), bias, LayerScale and residual fused
into the store.

2*M*N*K FLOPs without tensor cores; reads 2*M*N*K/16 operand elements plus the residual once.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Work goes on the caller's current stream (c10::cuda::getCurrentCUDAStream in the C++ wrapper).
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t layerscale_launch(const void* x, const void* w, const void* b, const void* gamma, const void* res,
                              void* y, int64_t m, int64_t n, int64_t k, int dtype, cudaStream_t stream);

static int dtype_code(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat) return 0;
  if (t.scalar_type() == torch::kHalf) return 1;
  TORCH_CHECK(t.scalar_type() == torch::kBFloat16, "unsupported dtype");
  return 2;
}

torch::Tensor layerscale_linear(torch::Tensor x, torch::Tensor w, torch::Tensor b, torch::Tensor gamma,
                                torch::Tensor residual) {
  TORCH_CHECK(x.is_cuda() && x.dtype() == w.dtype() && x.dtype() == residual.dtype());
  TORCH_CHECK(b.dtype() == x.dtype() && gamma.dtype() == x.dtype());
  x = x.contiguous();
  w = w.contiguous();
  residual = residual.contiguous();
  auto y = torch::empty({x.size(0), w.size(0)}, x.options());
  cudaError_t err = layerscale_launch(x.data_ptr(), w.data_ptr(), b.contiguous().data_ptr(),
                                      gamma.contiguous().data_ptr(), residual.data_ptr(), y.data_ptr(), x.size(0),
                                      w.size(0), x.size(1), dtype_code(x), c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, cudaGetErrorString(err));
  return y;
}
"""

CUDA_SOURCE = r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>

#define TILE 16

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T>
__global__ void layerscale_kernel(const T* x, const T* w, const T* b, const T* gamma, const T* res, T* y,
                                  int64_t m, int64_t n, int64_t k) {
  __shared__ float xs[TILE][TILE];
  __shared__ float ws[TILE][TILE + 1];
  int64_t row = (int64_t)blockIdx.y * TILE + threadIdx.y;
  int64_t col = (int64_t)blockIdx.x * TILE + threadIdx.x;
  int64_t wrow = (int64_t)blockIdx.x * TILE + threadIdx.y;
  float acc = 0.f;
  for (int64_t k0 = 0; k0 < k; k0 += TILE) {
    int64_t kk = k0 + threadIdx.x;
    xs[threadIdx.y][threadIdx.x] = (row < m && kk < k) ? to_float(x[row * k + kk]) : 0.f;
    ws[threadIdx.y][threadIdx.x] = (wrow < n && kk < k) ? to_float(w[wrow * k + kk]) : 0.f;
    __syncthreads();
    for (int i = 0; i < TILE; ++i) acc += xs[threadIdx.y][i] * ws[threadIdx.x][i];
    __syncthreads();
  }
  if (row < m && col < n) {
    float h = acc + to_float(b[col]);
    y[row * n + col] = from_float<T>(to_float(res[row * n + col]) + to_float(gamma[col]) * h);
  }
}

template <typename T>
static void launch(const void* x, const void* w, const void* b, const void* gamma, const void* res, void* y,
                   int64_t m, int64_t n, int64_t k, cudaStream_t s) {
  if (m == 0 || n == 0) return;
  dim3 block(TILE, TILE);
  dim3 grid((unsigned)((n + TILE - 1) / TILE), (unsigned)((m + TILE - 1) / TILE));
  layerscale_kernel<T><<<grid, block, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(w),
                                               static_cast<const T*>(b), static_cast<const T*>(gamma),
                                               static_cast<const T*>(res), static_cast<T*>(y), m, n, k);
}

cudaError_t layerscale_launch(const void* x, const void* w, const void* b, const void* gamma, const void* res,
                              void* y, int64_t m, int64_t n, int64_t k, int dtype, cudaStream_t stream) {
  if (dtype == 0) launch<float>(x, w, b, gamma, res, y, m, n, k, stream);
  else if (dtype == 1) launch<__half>(x, w, b, gamma, res, y, m, n, k, stream);
  else launch<__nv_bfloat16>(x, w, b, gamma, res, y, m, n, k, stream);
  return cudaGetLastError();
}
"""

_EXTENSION = None


def _extension():
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = load_inline(name="kernellab_layerscale_baseline", cpp_sources=CPP_SOURCE,
                                 cuda_sources=CUDA_SOURCE, functions=["layerscale_linear"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.proj = nn.Linear(in_features, out_features)
        self.gamma = nn.Parameter(torch.full((out_features,), 1e-5))
        self._ext = _extension()

    def forward(self, x, residual):
        return self._ext.layerscale_linear(x, self.proj.weight, self.proj.bias, self.gamma, residual)
