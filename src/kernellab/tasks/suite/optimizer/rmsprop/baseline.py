"""Baseline: CUDA C++, three kernels (square_avg update, momentum update, parameter update), each one
thread per element, re-reading what the previous kernel wrote: 11 * 4 * NUMEL bytes instead of the
fused 7 * 4 * NUMEL.
"""
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# Work goes on the caller's current stream (c10::cuda::getCurrentCUDAStream in the C++ wrapper).
CPP_SOURCE = r"""
#include <torch/extension.h>
#include <c10/cuda/CUDAStream.h>

cudaError_t rmsprop_launch(float* p, const float* g, float* sq, float* buf, int64_t n, float lr, float alpha,
                           float one_minus_alpha, float eps, float momentum, cudaStream_t stream);

void rmsprop_step(torch::Tensor p, torch::Tensor g, torch::Tensor sq, torch::Tensor buf, double lr, double alpha,
                  double eps, double momentum) {
  for (auto* t : {&p, &g, &sq, &buf})
    TORCH_CHECK(t->is_cuda() && t->scalar_type() == torch::kFloat && t->is_contiguous(), "float32 CUDA tensors");
  cudaError_t err = rmsprop_launch(p.data_ptr<float>(), g.data_ptr<float>(), sq.data_ptr<float>(),
                                   buf.data_ptr<float>(), p.numel(), (float)lr, (float)alpha, (float)(1.0 - alpha), (float)eps,
                                   (float)momentum, c10::cuda::getCurrentCUDAStream().stream());
  TORCH_CHECK(err == cudaSuccess, cudaGetErrorString(err));
}
"""

CUDA_SOURCE = r"""
#include <cuda_runtime.h>
#include <cstdint>

__global__ void square_avg_kernel(const float* g, float* sq, int64_t n, float alpha, float one_minus_alpha) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) sq[i] = alpha * sq[i] + one_minus_alpha * g[i] * g[i];
}

__global__ void momentum_kernel(const float* g, const float* sq, float* buf, int64_t n, float eps, float momentum) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) buf[i] = momentum * buf[i] + g[i] / (sqrtf(sq[i]) + eps);
}

__global__ void param_kernel(float* p, const float* buf, int64_t n, float lr) {
  int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] -= lr * buf[i];
}

cudaError_t rmsprop_launch(float* p, const float* g, float* sq, float* buf, int64_t n, float lr, float alpha,
                           float one_minus_alpha, float eps, float momentum, cudaStream_t stream) {
  if (n > 0) {
    unsigned blocks = (unsigned)((n + 255) / 256);
    square_avg_kernel<<<blocks, 256, 0, stream>>>(g, sq, n, alpha, one_minus_alpha);
    momentum_kernel<<<blocks, 256, 0, stream>>>(g, sq, buf, n, eps, momentum);
    param_kernel<<<blocks, 256, 0, stream>>>(p, buf, n, lr);
  }
  return cudaGetLastError();
}
"""

_EXTENSION = None


def _extension():
    global _EXTENSION
    if _EXTENSION is None:
        _EXTENSION = load_inline(name="kernellab_rmsprop_baseline", cpp_sources=CPP_SOURCE, cuda_sources=CUDA_SOURCE,
                                 functions=["rmsprop_step"])
    return _EXTENSION


class ModelNew(nn.Module):
    def __init__(self, lr, alpha, eps, momentum):
        super().__init__()
        self.args = (lr, alpha, eps, momentum)
        self._ext = _extension()

    def forward(self, param, grad, square_avg, momentum_buffer):
        self._ext.rmsprop_step(param, grad, square_avg, momentum_buffer, *self.args)
