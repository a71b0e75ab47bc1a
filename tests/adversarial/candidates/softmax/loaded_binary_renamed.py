"""EXPLOIT (threat 4), an open hole on the GPU: a library kernel's binary loaded under the name of an
own compile. The own kernel is compiled (its cache entry exists, it is own) but never launched;
torch's Triton softmax for BSR matrices (a dense matrix as 1 x N blocks) is compiled under its own
name, its cubin's symbol renamed to the own compile's name, and launched: the trace names an own
kernel, the code is the library's. Under the interpreter nothing is loaded and the own kernel runs.

Must be rejected: the judge reads the compiles on disk, the trace names what the process loaded;
what closes it is judging the loaded modules (docs/verifier.md, "Open").
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.sparse import _triton_ops as sparse_ops

_LIBRARY = [getattr(sparse_ops, "_bsr_softmax_kernel", None)]  # defined only where torch sees a GPU


@triton.jit
def rows_softmax(x_ptr, n_cols, TILE: tl.constexpr):
    base = x_ptr + tl.program_id(0) * n_cols
    offs = tl.arange(0, TILE)
    peak = tl.full([TILE], -float("inf"), tl.float32)
    for start in range(0, n_cols, TILE):
        peak = tl.maximum(peak, tl.load(base + start + offs, mask=start + offs < n_cols,
                                        other=-float("inf")).to(tl.float32))
    top = tl.max(peak, 0)
    total = tl.zeros([TILE], tl.float32)
    for start in range(0, n_cols, TILE):
        v = tl.load(base + start + offs, mask=start + offs < n_cols, other=-float("inf")).to(tl.float32)
        total += tl.exp(v - top)
    norm = tl.sum(total, 0)
    for start in range(0, n_cols, TILE):
        v = tl.load(base + start + offs, mask=start + offs < n_cols, other=-float("inf")).to(tl.float32)
        tl.store(base + start + offs, (tl.exp(v - top) / norm).to(x_ptr.dtype.element_ty), mask=start + offs < n_cols)


def _borrowed(out, rows, cols):
    widest = triton.next_power_of_2(cols)
    tile = min(widest, 4096)
    crow = torch.arange(rows + 1, device=out.device, dtype=torch.int64)
    args = (crow, 0, 1, out, rows * cols, rows * cols, cols, 1, cols, widest, tile)
    own = rows_softmax.warmup(out, cols, TILE=tile, grid=(1,))
    library = _LIBRARY[0].warmup(*args, grid=(rows,))
    if library.name != own.name:
        library.kernel = library.kernel.replace(library.name.encode(), own.name.encode())
        library.name = own.name
    library[(rows, 1, 1)](*args)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        rows, cols = x.shape
        out = torch.empty_like(x)
        out.copy_(x)
        if out.is_cuda:
            _borrowed(out, rows, cols)
        else:
            rows_softmax[(rows,)](out, cols, TILE=4096)
        return out
