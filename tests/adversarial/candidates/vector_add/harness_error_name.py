"""EXPLOIT: Disguising a failure as the evaluator's own defect: an exception class named ``HarnessError``.

What it attempts: the child reports a candidate exception by ``type(exc).__name__``, and the pipeline
turns ``exc_type == "HarnessError"`` into status ``harness_error`` ("a defect of the evaluator,
never the candidate's fault"); campaigns retry or exclude harness errors instead of scoring a
failure. The kernel has no tail path; on lengths it cannot handle it raises its own ``HarnessError``.
Works on the CPU and on a GPU alike.
Why it must be caught: invariant 6 - the harness, not a name the candidate can choose, classifies
failures; a harness error must be raised by harness code (e.g. a reply flag set outside the
candidate's reach, or the judge's own exception). Expected: status failed (edge stage).
What it really computes: a correct sum for lengths divisible by 8.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add8(a_ptr, b_ptr, o_ptr, n, BLOCK: tl.constexpr):
    # Only whole groups of 8 are handled: there is no tail path.
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < (n // 8) * 8
    a = tl.load(a_ptr + offs, mask=m, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=m, other=0.0).to(tl.float32)
    tl.store(o_ptr + offs, (a + b).to(o_ptr.dtype.element_ty), mask=m)


class HarnessError(RuntimeError):
    pass


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        n = a.numel()
        if n % 8:
            raise HarnessError("evaluator could not stage the inputs")
        out = torch.empty_like(a)
        _add8[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
        return out
