"""Baseline: CUDA C++, one thread per output logit, each thread walking a row of x and a row of w.

Threads of a warp read 32 different rows of x with stride K (uncoalesced), and every row of x is
read E times: E * T * K loads where T * K would do. 2*T*E*K FLOPs.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# The wrapper below queues the kernel on the caller's current stream: c10/cuda/CUDAStream.h is
# available to the C++ side of the extension, and the stream is passed to the CUDA launcher.
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t router_logits_launch(const void* x, const void* w, void* y, int64_t t, int64_t k, int64_t e,
                                 int dtype, cudaStream_t stream);

static int dtype_code(const torch::Tensor& t) {
  if (t.scalar_type() == torch::kFloat) return 0;
  if (t.scalar_type() == torch::kHalf) return 1;
  TORCH_CHECK(t.scalar_type() == torch::kBFloat16, "unsupported dtype");
  return 2;
}

torch::Tensor router_logits(torch::Tensor x, torch::Tensor w) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda() && x.dtype() == w.dtype());
  x = x.contiguous();
  w = w.contiguous();
  auto y = torch::empty({x.size(0), w.size(0)}, x.options());
  cudaError_t err = router_logits_launch(x.data_ptr(), w.data_ptr(), y.data_ptr(), x.size(0), x.size(1),
                                         w.size(0), dtype_code(x), c10::cuda::getCurrentCUDAStream().stream());
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
__global__ void router_logits_kernel(const T* x, const T* w, T* y, int64_t t, int64_t k, int64_t e) {
  int64_t idx = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (idx >= t * e) return;
  int64_t row = idx / e, expert = idx % e;
  const T* xr = x + row * k;
  const T* wr = w + expert * k;
  float acc = 0.f;
  for (int64_t i = 0; i < k; ++i) acc += to_float(xr[i]) * to_float(wr[i]);
  y[idx] = from_float<T>(acc);
}

template <typename T>
static void launch(const void* x, const void* w, void* y, int64_t t, int64_t k, int64_t e, cudaStream_t s) {
  int64_t n = t * e;
  if (n == 0) return;
  router_logits_kernel<T><<<(unsigned)((n + 255) / 256), 256, 0, s>>>(
      static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y), t, k, e);
}

cudaError_t router_logits_launch(const void* x, const void* w, void* y, int64_t t, int64_t k, int64_t e,
                                 int dtype, cudaStream_t stream) {
  if (dtype == 0) launch<float>(x, w, y, t, k, e, stream);
  else if (dtype == 1) launch<__half>(x, w, y, t, k, e, stream);
  else launch<__nv_bfloat16>(x, w, y, t, k, e, stream);
  return cudaGetLastError();
}
"""

_EXTENSION = None


def _extension():
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = load_inline(name="kernellab_router_logits_baseline", cpp_sources=CPP_SOURCE,
                                 cuda_sources=CUDA_SOURCE, functions=["router_logits"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._ext = _extension()

    def forward(self, x, w):
        return self._ext.router_logits(x, w)
