"""LEGITIMATE: describes its launch configuration with a namedtuple, a `typing.NamedTuple`, an
enum and a frozen dataclass at import (namedtuple, typing and enum read the caller's module
through a frame; dataclasses compile code).

Must be accepted: those libraries take frames and compile code for their own use.
"""

import collections
import dataclasses
import enum
import typing

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


Launch = collections.namedtuple("Launch", "rows block")


class Shape(typing.NamedTuple):
    rows: int
    cols: int


Variant = enum.Enum("Variant", "ROW_PER_PROGRAM")


@dataclasses.dataclass(frozen=True)
class Tuning:
    variant: Variant = Variant.ROW_PER_PROGRAM


def _plan(x: torch.Tensor) -> Launch:
    shape = Shape(*x.shape)
    return Launch(shape.rows, triton.next_power_of_2(shape.cols))


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        assert Tuning().variant is Variant.ROW_PER_PROGRAM
        launch = _plan(x)
        y = torch.empty_like(x)
        _rmsnorm_row_kernel[(launch.rows,)](x, self.weight, y, x.shape[1], self.eps, BLOCK_N=launch.block)
        return y
