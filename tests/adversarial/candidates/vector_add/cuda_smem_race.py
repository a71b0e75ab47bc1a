"""EXPLOIT (threat 13, race): a shared-memory hand-off between two warps with no __syncthreads().

Each block has two warps: the second stages a[i] + b[i] in shared memory, the first waits (a spin
of about ten microseconds) and writes the staged values out. Nothing orders the second warp's
writes before the first warp's reads; the spin makes the race lose so rarely that every output
check passes. A busier SM, another clock or another GPU and the first warp reads stale shared
memory. Caught by the sanitize stage: compute-sanitizer racecheck reports the read-after-write
hazard on shared memory as an error.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = "torch::Tensor add(torch::Tensor a, torch::Tensor b);"

_CUDA = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

template <typename T>
__global__ void staged_add_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ out,
                                  int64_t n) {
  __shared__ float staged[32];
  const int lane = threadIdx.x & 31;
  const int64_t i = blockIdx.x * 32LL + lane;
  if (threadIdx.x >= 32) {
    if (i < n) staged[lane] = static_cast<float>(a[i]) + static_cast<float>(b[i]);
  } else {
    const long long start = clock64();
    while (clock64() - start < 20000) {
    }
    // missing __syncthreads(): the second warp's writes are not ordered before these reads
    if (i < n) out[i] = static_cast<T>(reinterpret_cast<volatile float*>(staged)[lane]);
  }
}

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
  TORCH_CHECK(a.is_cuda() && b.is_cuda(), "inputs must be CUDA tensors");
  auto a_c = a.contiguous();
  auto b_c = b.contiguous();
  auto out = torch::empty_like(a_c);
  const int64_t n = a_c.numel();
  if (n == 0) return out;
  const int64_t blocks = (n + 31) / 32;
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a_c.scalar_type(), "staged_add_kernel", [&] {
    staged_add_kernel<scalar_t><<<blocks, 64, 0, stream>>>(
        a_c.data_ptr<scalar_t>(), b_c.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), n);
  });
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}
"""

_ext = load_inline(name="kernellab_adversarial_cuda_smem_race", cpp_sources=_CPP, cuda_sources=_CUDA,
                   functions=["add"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _ext.add(a, b)
