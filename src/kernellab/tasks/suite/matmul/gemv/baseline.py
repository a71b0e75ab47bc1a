"""Baseline: CUDA C++, one warp per output row: each lane sums every 32nd element of the row, then
the warp adds its 32 partial sums with shuffles.

Loads are coalesced but scalar, and a block holds only 4 rows; N * K loads, 2 * N * K FLOPs. Vector
loads (16 bytes per lane), several rows per warp for small K, or split-K for small N get closer to
the copy bandwidth. (One thread per row walking its row serially reads uncoalesced and, in float32
at K = 16384, went over the 2e-5 tolerance floor on the H100: a serial sum's rounding error grows
with sqrt(K).)
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Work goes on the caller's current stream (c10::cuda::getCurrentCUDAStream in the C++ wrapper).
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t gemv_launch(const void* W, const void* x, void* y, int64_t n, int64_t k, int dtype,
                        cudaStream_t stream);

static int dtype_code(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat) return 0;
  if (t.scalar_type() == torch::kHalf) return 1;
  TORCH_CHECK(t.scalar_type() == torch::kBFloat16, "unsupported dtype");
  return 2;
}

torch::Tensor gemv(torch::Tensor W, torch::Tensor x) {
  TORCH_CHECK(W.is_cuda() && x.is_cuda() && W.dtype() == x.dtype());
  W = W.contiguous();
  x = x.contiguous();
  auto y = torch::empty({W.size(0)}, W.options());
  cudaError_t err = gemv_launch(W.data_ptr(), x.data_ptr(), y.data_ptr(), W.size(0), W.size(1),
                                dtype_code(W), c10::cuda::getCurrentCUDAStream().stream());
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

constexpr int ROWS_PER_BLOCK = 4;

template <typename T>
__global__ void gemv_kernel(const T* W, const T* x, T* y, int64_t n, int64_t k) {
  int lane = threadIdx.x & 31;
  int64_t row = (int64_t)blockIdx.x * ROWS_PER_BLOCK + (threadIdx.x >> 5);
  if (row >= n) return;
  const T* wr = W + row * k;
  float acc = 0.f;
  for (int64_t i = lane; i < k; i += 32) acc += to_float(wr[i]) * to_float(x[i]);
  for (int offset = 16; offset > 0; offset >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, offset);
  if (lane == 0) y[row] = from_float<T>(acc);
}

template <typename T>
static void launch(const void* W, const void* x, void* y, int64_t n, int64_t k, cudaStream_t s) {
  if (n == 0) return;
  gemv_kernel<T><<<(unsigned)((n + ROWS_PER_BLOCK - 1) / ROWS_PER_BLOCK), 32 * ROWS_PER_BLOCK, 0, s>>>(
      static_cast<const T*>(W), static_cast<const T*>(x), static_cast<T*>(y), n, k);
}

cudaError_t gemv_launch(const void* W, const void* x, void* y, int64_t n, int64_t k, int dtype,
                        cudaStream_t stream) {
  if (dtype == 0) launch<float>(W, x, y, n, k, stream);
  else if (dtype == 1) launch<__half>(W, x, y, n, k, stream);
  else launch<__nv_bfloat16>(W, x, y, n, k, stream);
  return cudaGetLastError();
}
"""

_EXTENSION = None


def _extension():
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = load_inline(name="kernellab_gemv_baseline", cpp_sources=CPP_SOURCE,
                                 cuda_sources=CUDA_SOURCE, functions=["gemv"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ext = _extension()

    def forward(self, W, x):
        return self._ext.gemv(W, x)
