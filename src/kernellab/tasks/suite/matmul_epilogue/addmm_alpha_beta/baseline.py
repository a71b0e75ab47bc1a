"""Baseline: CUDA C++ 16x16 shared-memory tiled GEMM (fp32 FMA, no tensor cores), the beta * C term
read in the epilogue.

Reads 2*M*N*K/16 operand elements plus C once; 2*M*N*K FLOPs.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

ALPHA = 0.5
BETA = 0.25

# Work goes on the caller's current stream (c10::cuda::getCurrentCUDAStream in the C++ wrapper).
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t addmm_launch(const void* c, const void* a, const void* b, void* out, int64_t m, int64_t n, int64_t k,
                         float alpha, float beta, int dtype, cudaStream_t stream);

static int dtype_code(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat) return 0;
  if (t.scalar_type() == torch::kHalf) return 1;
  TORCH_CHECK(t.scalar_type() == torch::kBFloat16, "unsupported dtype");
  return 2;
}

torch::Tensor addmm_scaled(torch::Tensor c, torch::Tensor a, torch::Tensor b, double alpha, double beta) {
  TORCH_CHECK(a.is_cuda() && a.dtype() == b.dtype() && a.dtype() == c.dtype());
  a = a.contiguous();
  b = b.contiguous();
  c = c.contiguous();
  auto out = torch::empty({a.size(0), b.size(1)}, a.options());
  cudaError_t err = addmm_launch(c.data_ptr(), a.data_ptr(), b.data_ptr(), out.data_ptr(), a.size(0), b.size(1),
                                 a.size(1), (float)alpha, (float)beta, dtype_code(a),
                                 c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, cudaGetErrorString(err));
  return out;
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
__global__ void addmm_kernel(const T* c, const T* a, const T* b, T* out, int64_t m, int64_t n, int64_t k,
                             float alpha, float beta) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  int64_t row = (int64_t)blockIdx.y * TILE + threadIdx.y;
  int64_t col = (int64_t)blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int64_t k0 = 0; k0 < k; k0 += TILE) {
    int64_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = (row < m && ka < k) ? to_float(a[row * k + ka]) : 0.f;
    bs[threadIdx.y][threadIdx.x] = (kb < k && col < n) ? to_float(b[kb * n + col]) : 0.f;
    __syncthreads();
    for (int i = 0; i < TILE; ++i) acc += as[threadIdx.y][i] * bs[i][threadIdx.x];
    __syncthreads();
  }
  if (row < m && col < n) out[row * n + col] = from_float<T>(beta * to_float(c[row * n + col]) + alpha * acc);
}

template <typename T>
static void launch(const void* c, const void* a, const void* b, void* out, int64_t m, int64_t n, int64_t k,
                   float alpha, float beta, cudaStream_t s) {
  if (m == 0 || n == 0) return;
  dim3 block(TILE, TILE);
  dim3 grid((unsigned)((n + TILE - 1) / TILE), (unsigned)((m + TILE - 1) / TILE));
  addmm_kernel<T><<<grid, block, 0, s>>>(static_cast<const T*>(c), static_cast<const T*>(a),
                                          static_cast<const T*>(b), static_cast<T*>(out), m, n, k, alpha, beta);
}

cudaError_t addmm_launch(const void* c, const void* a, const void* b, void* out, int64_t m, int64_t n, int64_t k,
                         float alpha, float beta, int dtype, cudaStream_t stream) {
  if (dtype == 0) launch<float>(c, a, b, out, m, n, k, alpha, beta, stream);
  else if (dtype == 1) launch<__half>(c, a, b, out, m, n, k, alpha, beta, stream);
  else launch<__nv_bfloat16>(c, a, b, out, m, n, k, alpha, beta, stream);
  return cudaGetLastError();
}
"""

_EXTENSION = None


def _extension():
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = load_inline(name="kernellab_addmm_baseline", cpp_sources=CPP_SOURCE,
                                 cuda_sources=CUDA_SOURCE, functions=["addmm_scaled"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ext = _extension()

    def forward(self, C, A, B):
        return self._ext.addmm_scaled(C, A, B, ALPHA, BETA)
