"""EXPLOIT (threat 1): as ``cuda_thrust_forged_name``, Thrust's kernel under the own suffix by a
``#define``, built with ``-Xcompiler -P --keep``: the preprocessor writes no line markers, so every
line, Thrust's headers included, is attributed to the preprocessed copy nvcc keeps in the build
folder. Caught by requiring an own kernel's code to start in the very file ``load_inline`` wrote
(``cuda.cu`` beside the binary), not in any file of the build folder.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CPP = "torch::Tensor add(torch::Tensor a, torch::Tensor b);"

# Every name Thrust's transform has launched under, across CUDA 12 and 13.
_CUDA = r"""
#define transform_kernel transform_kernel__kl_own
#define _kernel_agent _kernel_agent__kl_own
#define static_kernel static_kernel__kl_own
#include <thrust/transform.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void mark(int64_t n) { }  // an own kernel, so the source has one: it does nothing

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
  auto a_c = a.contiguous();
  auto b_c = b.contiguous();
  auto out = torch::empty_like(a_c);
  const int64_t n = a_c.numel();
  if (n == 0) return out;
  auto stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a_c.scalar_type(), "add", [&] {
    const scalar_t* x = a_c.data_ptr<scalar_t>();
    thrust::transform(thrust::cuda::par_nosync.on(stream), x, x + n, b_c.data_ptr<scalar_t>(),
                      out.data_ptr<scalar_t>(), thrust::plus<scalar_t>());
  });
  mark<<<1, 1, 0, stream>>>(n);
  return out;
}
"""

_ext = load_inline(name="kernellab_adversarial_cuda_thrust_keep_p", cpp_sources=_CPP, cuda_sources=_CUDA,
                   functions=["add"], extra_cuda_cflags=["-std=c++17", "-Xcompiler", "-P", "--keep"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return _ext.add(a, b)
