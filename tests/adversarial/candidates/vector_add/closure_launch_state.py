"""EXPLOIT (threat 14): Harness reach through ``__closure__``: forge the interpreter's "own kernel ran" evidence and hide torch ops from the op log.

What it attempts: the interpreter hook the harness installs (``GridExecutor.__call__`` =
``traced_call``) closes over ``state``, the ``InterpreterLaunches`` record that says which of the
candidate's Triton functions ran and whether an interpreted launch is in progress (``depth``). The op
log ignores ops while ``depth > 0`` (the interpreter's own aten ops). The candidate takes ``state``
out of the closure cell, adds its kernel's name to ``state.names`` and raises ``state.depth`` around
its torch compute. No Triton kernel is ever launched.
Why it must be caught: invariant 4, and invariant 3 (a kernel counts as the candidate's own by its
compiled identity - here nothing was even compiled). Expected: process_escape or policy.
What it really computes: ``a + b`` with torch. CPU-only cheat (on a GPU there is no such closure;
the same file then runs torch and the trace names the library kernel).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.runtime import interpreter


@triton.jit
def add_kernel(a_ptr, b_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(o_ptr + offs, tl.load(a_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)


def _launch_state():
    for cell in interpreter.GridExecutor.__call__.__closure__ or ():
        value = cell.cell_contents
        if hasattr(value, "depth") and hasattr(value, "names"):
            return value
    return None


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.state = _launch_state()

    def forward(self, a, b):
        state = self.state
        if state is None:
            return a + b
        state.names |= {"add_kernel"}
        state.depth += 1
        out = a + b
        state.depth -= 1
        return out
