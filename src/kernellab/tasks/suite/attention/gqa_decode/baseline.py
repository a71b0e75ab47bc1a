"""Baseline: CUDA C++, one block of 128 threads per (sequence, query head), three passes over the cache.

Each query head re-reads its kv head (H / HKV times the necessary traffic); dot products are
computed one position per thread with strided (uncoalesced) loads, and the fp32 scores go through a
global scratch row. Reads 2*B*H*S*D cache elements, the minimum is 2*B*HKV*S*D.
"""
import math

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Work goes on the caller's current stream (c10::cuda::getCurrentCUDAStream in the C++ wrapper).
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t gqa_decode_launch(const void* q, const void* k, const void* v, float* scratch, void* out, int64_t b,
                              int64_t h, int64_t hkv, int64_t s, int64_t d, float scale, int dtype,
                              cudaStream_t stream);

static int dtype_code(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat) return 0;
  if (t.scalar_type() == torch::kHalf) return 1;
  TORCH_CHECK(t.scalar_type() == torch::kBFloat16, "unsupported dtype");
  return 2;
}

torch::Tensor gqa_decode(torch::Tensor q, torch::Tensor k, torch::Tensor v, double scale) {
  TORCH_CHECK(q.is_cuda() && q.dtype() == k.dtype() && q.dtype() == v.dtype());
  q = q.contiguous();
  k = k.contiguous();
  v = v.contiguous();
  int64_t b = q.size(0), h = q.size(1), d = q.size(3), hkv = k.size(1), s = k.size(2);
  TORCH_CHECK(h % hkv == 0, "query heads must be a multiple of kv heads");
  auto out = torch::empty_like(q);
  auto scratch = torch::empty({b, h, s}, q.options().dtype(torch::kFloat));
  cudaError_t err = gqa_decode_launch(q.data_ptr(), k.data_ptr(), v.data_ptr(), scratch.data_ptr<float>(),
                                      out.data_ptr(), b, h, hkv, s, d, (float)scale, dtype_code(q),
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

#define THREADS 128

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

__device__ float block_reduce(float v, bool is_max) {
  __shared__ float buf[THREADS];
  buf[threadIdx.x] = v;
  __syncthreads();
  for (int stride = THREADS / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) {
      float o = buf[threadIdx.x + stride];
      buf[threadIdx.x] = is_max ? fmaxf(buf[threadIdx.x], o) : buf[threadIdx.x] + o;
    }
    __syncthreads();
  }
  float r = buf[0];
  __syncthreads();
  return r;
}

template <typename T>
__global__ void gqa_decode_kernel(const T* q, const T* k, const T* v, float* scratch, T* out, int64_t h,
                                  int64_t hkv, int64_t s_len, int64_t d, float scale) {
  int64_t bh = blockIdx.x;
  int64_t b = bh / h, head = bh % h;
  int64_t kvh = b * hkv + head / (h / hkv);
  const T* qr = q + bh * d;
  const T* kb = k + kvh * s_len * d;
  const T* vb = v + kvh * s_len * d;
  float* sc = scratch + bh * s_len;
  float local_max = -INFINITY;
  for (int64_t s = threadIdx.x; s < s_len; s += THREADS) {
    float dot = 0.f;
    for (int64_t i = 0; i < d; ++i) dot += to_float(qr[i]) * to_float(kb[s * d + i]);
    dot *= scale;
    sc[s] = dot;
    local_max = fmaxf(local_max, dot);
  }
  float mx = block_reduce(local_max, true);
  float local_sum = 0.f;
  for (int64_t s = threadIdx.x; s < s_len; s += THREADS) {
    float e = __expf(sc[s] - mx);
    sc[s] = e;
    local_sum += e;
  }
  float total = block_reduce(local_sum, false);
  __syncthreads();
  for (int64_t i = threadIdx.x; i < d; i += THREADS) {
    float acc = 0.f;
    for (int64_t s = 0; s < s_len; ++s) acc += sc[s] * to_float(vb[s * d + i]);
    out[bh * d + i] = from_float<T>(acc / total);
  }
}

template <typename T>
static void launch(const void* q, const void* k, const void* v, float* scratch, void* out, int64_t b, int64_t h,
                   int64_t hkv, int64_t s, int64_t d, float scale, cudaStream_t st) {
  if (b * h == 0) return;
  gqa_decode_kernel<T><<<(unsigned)(b * h), THREADS, 0, st>>>(
      static_cast<const T*>(q), static_cast<const T*>(k), static_cast<const T*>(v), scratch, static_cast<T*>(out),
      h, hkv, s, d, scale);
}

cudaError_t gqa_decode_launch(const void* q, const void* k, const void* v, float* scratch, void* out, int64_t b,
                              int64_t h, int64_t hkv, int64_t s, int64_t d, float scale, int dtype,
                              cudaStream_t stream) {
  if (dtype == 0) launch<float>(q, k, v, scratch, out, b, h, hkv, s, d, scale, stream);
  else if (dtype == 1) launch<__half>(q, k, v, scratch, out, b, h, hkv, s, d, scale, stream);
  else launch<__nv_bfloat16>(q, k, v, scratch, out, b, h, hkv, s, d, scale, stream);
  return cudaGetLastError();
}
"""

_EXTENSION = None


def _extension():
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = load_inline(name="kernellab_gqa_decode_baseline", cpp_sources=CPP_SOURCE,
                                 cuda_sources=CUDA_SOURCE, functions=["gqa_decode"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ext = _extension()

    def forward(self, q, k_cache, v_cache):
        return self._ext.gqa_decode(q, k_cache, v_cache, 1.0 / math.sqrt(q.shape[-1]))
