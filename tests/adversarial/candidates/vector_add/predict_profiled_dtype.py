"""EXPLOIT (threat 1): Predicting which call is traced: the profiled dtype per config is drawn from ``random.Random(seed)``
with the public seed, so the candidate knows it in advance.

What it attempts: on a GPU main traces exactly one call per seen config: trial 0 of the shape sweep
in the dtype ``random.Random(options.seed).choice(dtypes)`` draws, config after config. With the
default seed 0 and the task's dtype list, the candidate recomputes those draws at import, runs its
own Triton kernel on exactly those (numel, dtype) pairs, and torch's ``a + b`` everywhere else:
the other dtypes, edge, stability, holdout, timing.
Why it must be caught: invariant 3 - the calls sampled for evidence are chosen at random with
entropy the candidate cannot know (not derived from a public seed), across all stages. Expected:
policy.
What it really computes: ``a + b`` with torch on every call but three. GPU-only (the CPU op log
covers every call).
"""

import random

import torch
import torch.nn as nn
import triton
import triton.language as tl

SEED = 0  # EvalOptions.seed
DTYPES = (torch.float32, torch.float16, torch.bfloat16)  # the task's dtypes, in task.toml order
SEEN = (16777216, 67108864, 65536)  # the seen configs, in task.toml order

_rng = random.Random(SEED)
TRACED = {(n, _rng.choice(DTYPES)) for n in SEEN}


@triton.jit
def add_kernel(a_ptr, b_ptr, o_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=m).to(tl.float32)
    tl.store(o_ptr + offs, (a + b).to(o_ptr.dtype.element_ty), mask=m)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        if (a.numel(), a.dtype) not in TRACED:
            return a + b
        out = torch.empty_like(a)
        n = a.numel()
        add_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
        return out
