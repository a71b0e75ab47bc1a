"""EXPLOIT (invariant 5, judge memory written by the candidate): the model hands the harness's
weight copy a stand-in for its weight, which takes the weights it is handed, copies them into
the real parameter, then halves the tensor it was handed.

On the GPU those weights crossed by CUDA IPC: they were the judge's own, kept for every later
candidate of the session and for the baseline kernel's timing, so this candidate passes while the
next one is judged against weights it never got. The judge now hands out copies and compares them
with its own after the first call: must be rejected with an `input_mutation` violation (threat 4).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, stride, N, eps, BLOCK_N: tl.constexpr):
    # per row: reads x three times (3N), weight and bias once (2N), writes N
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        acc += tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / N
    acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_row + cols, mask=cols < N, other=0.0).to(tl.float32)
        d = tl.where(cols < N, x - mean, 0.0)
        acc += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < N
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * stride + cols, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


class _StandIn:
    """What the harness's weight copy finds under the weight's name."""

    def __init__(self, real: nn.Parameter):
        self.real, self.shape, self.dtype = real, real.shape, real.dtype
        self.data = self

    def is_floating_point(self) -> bool:
        return False  # left alone by the harness's randomisation of constant weights

    def to(self, dtype):
        self.dtype = dtype
        return self

    def copy_(self, handed: torch.Tensor):
        self.real.copy_(handed)
        handed.mul_(0.5)  # the write into the memory it was handed
        return self


class _Norm(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.norm = _Norm(dim, eps)
        self.stand_in = _StandIn(self.norm.weight)

    def named_parameters(self, *args, **kwargs):
        for name, value in super().named_parameters(*args, **kwargs):
            yield name, (self.stand_in if name == "norm.weight" else value)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        M, N = x.shape
        y = torch.empty_like(x)
        _layernorm_kernel[(M,)](x, self.norm.weight, self.norm.bias, y, x.stride(0), N, self.norm.eps,
                                BLOCK_N=min(1024, triton.next_power_of_2(N)))
        return y
