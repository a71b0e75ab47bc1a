"""EXPLOIT (threat 6, lazy result in a tensor subclass): returns a torch.Tensor subclass whose
storage is filled by the kernel only when some torch function first touches it, so a timer around
forward measures an empty call.

Must be rejected with a `deferred_result` violation: the static scan bans tensor subclasses
(subclassing torch.Tensor, __torch_function__ / __torch_dispatch__), and the exact-type check
(type(out) is torch.Tensor) fails at run time.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_row_kernel(x_ptr, w_ptr, y_ptr, N, eps, BLOCK_N: tl.constexpr):
    # per row: reads N of x and N of weight, writes N of y (rows contiguous)
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)


def _rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    M, N = x.shape
    y = torch.empty_like(x)
    _rmsnorm_row_kernel[(M,)](x, weight, y, N, eps, BLOCK_N=triton.next_power_of_2(N))
    return y


class _LazyResult(torch.Tensor):
    @staticmethod
    def __new__(cls, storage: torch.Tensor, compute):
        result = torch.Tensor._make_subclass(cls, storage)
        result._pending = (compute, storage)
        return result

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        for arg in list(args) + list((kwargs or {}).values()):
            pending = getattr(arg, "_pending", None) if isinstance(arg, _LazyResult) else None
            if pending is not None:
                arg._pending = None
                compute, storage = pending
                compute(storage)
        return super().__torch_function__(func, types, args, kwargs or {})


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        storage = torch.empty_like(x)
        weight, eps = self.weight.detach(), self.eps

        def compute(out: torch.Tensor) -> None:
            out.copy_(_rmsnorm(x, weight, eps))

        return _LazyResult(storage, compute)
