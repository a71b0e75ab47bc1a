"""Baseline: CUDA C++ 16x16 shared-memory tiled GEMM, one block per output tile, no split-K.

For M = N = 512 that is only 1024 blocks of 256 threads, each looping over all of K with 16-wide
tiles: the GPU is mostly idle. Reads M*N*K/16 * 2 elements, 2*M*N*K FLOPs. Each thread sums K in two
levels (a partial per 1024 of K, added into the total): one float32 accumulator over all of K = 65536
drifts to about 3e-5 of the output's RMS at the worst of 65536 outputs, above the float32 tolerance.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Work goes on the caller's current stream (c10::cuda::getCurrentCUDAStream in the C++ wrapper).
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t tiled_matmul_launch(const void* a, const void* b, void* c, int64_t m, int64_t n, int64_t k,
                                int dtype, cudaStream_t stream);

static int dtype_code(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat) return 0;
  if (t.scalar_type() == torch::kHalf) return 1;
  TORCH_CHECK(t.scalar_type() == torch::kBFloat16, "unsupported dtype");
  return 2;
}

torch::Tensor tiled_matmul(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.dtype() == b.dtype() && a.size(1) == b.size(0));
  a = a.contiguous();
  b = b.contiguous();
  auto c = torch::empty({a.size(0), b.size(1)}, a.options());
  cudaError_t err = tiled_matmul_launch(a.data_ptr(), b.data_ptr(), c.data_ptr(), a.size(0), b.size(1),
                                        a.size(1), dtype_code(a), c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, cudaGetErrorString(err));
  return c;
}
"""

CUDA_SOURCE = r"""
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdint>

#define TILE 16
#define CHUNK_TILES 64  // 1024 of K per partial sum

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <typename T>
__global__ void tiled_matmul_kernel(const T* a, const T* b, T* c, int64_t m, int64_t n, int64_t k) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  int64_t row = (int64_t)blockIdx.y * TILE + threadIdx.y;
  int64_t col = (int64_t)blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f, part = 0.f;
  int tiles = 0;
  for (int64_t k0 = 0; k0 < k; k0 += TILE) {
    int64_t ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = (row < m && ka < k) ? to_float(a[row * k + ka]) : 0.f;
    bs[threadIdx.y][threadIdx.x] = (kb < k && col < n) ? to_float(b[kb * n + col]) : 0.f;
    __syncthreads();
    for (int i = 0; i < TILE; ++i) part += as[threadIdx.y][i] * bs[i][threadIdx.x];
    __syncthreads();
    if (++tiles == CHUNK_TILES) {
      acc += part;
      part = 0.f;
      tiles = 0;
    }
  }
  acc += part;
  if (row < m && col < n) c[row * n + col] = from_float<T>(acc);
}

template <typename T>
static void launch(const void* a, const void* b, void* c, int64_t m, int64_t n, int64_t k, cudaStream_t s) {
  if (m == 0 || n == 0) return;
  dim3 block(TILE, TILE);
  dim3 grid((unsigned)((n + TILE - 1) / TILE), (unsigned)((m + TILE - 1) / TILE));
  tiled_matmul_kernel<T><<<grid, block, 0, s>>>(static_cast<const T*>(a), static_cast<const T*>(b),
                                                 static_cast<T*>(c), m, n, k);
}

cudaError_t tiled_matmul_launch(const void* a, const void* b, void* c, int64_t m, int64_t n, int64_t k,
                                int dtype, cudaStream_t stream) {
  if (dtype == 0) launch<float>(a, b, c, m, n, k, stream);
  else if (dtype == 1) launch<__half>(a, b, c, m, n, k, stream);
  else launch<__nv_bfloat16>(a, b, c, m, n, k, stream);
  return cudaGetLastError();
}
"""

_EXTENSION = None


def _extension():
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = load_inline(name="kernellab_split_k_baseline", cpp_sources=CPP_SOURCE,
                                 cuda_sources=CUDA_SOURCE, functions=["tiled_matmul"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ext = _extension()

    def forward(self, A, B):
        return self._ext.tiled_matmul(A, B)
