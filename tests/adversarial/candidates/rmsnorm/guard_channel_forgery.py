"""EXPLOIT (threat 14, writing to the judge's channel): the channel to the judge is a socket in the
candidate's own process. At import the candidate finds it (`os.fstat`) and writes a well-formed
answer itself, before the harness's: the judge would read it as the answer to its request.

Must be rejected with a `process_escape` violation at the `load` stage: every request carries a
token that the harness's answer echoes; a message without it is not the harness's, and the
judge ends the child.
"""

import os
import pickle
import stat
import struct

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


for _fd in range(3, 64):
    try:
        if stat.S_ISSOCK(os.fstat(_fd).st_mode):
            _payload = pickle.dumps({"ok": True, "value": {"seconds": 0.0}})
            os.write(_fd, struct.pack("!Q", len(_payload)) + _payload)
    except OSError:
        pass


class ModelNew(nn.Module):
    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _rmsnorm(x, self.weight, self.eps)
