"""EXPLOIT (threat 1): The kernelbench policy is not judged at all on the CPU: a token kernel beside library compute passes.

What it attempts: under ``policy = "kernelbench"`` library ops are allowed, but "at least one own
kernel carries real work" (on a GPU: at least 10% of GPU time). On the CPU main judges the op log
only for strict tasks, so nothing checks the rule: ``torch.matmul`` + ``torch.relu`` do everything
and an own Triton kernel copies one element onto itself.
Why it must be caught: policy evidence must exist on every device the verdict is given on (or the
CPU verdict must say the policy was not judged). Expected: policy. On a GPU main rejects it (own
share far under 10%).
What it really computes: relu(a @ b) with torch.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch(x_ptr):
    tl.store(x_ptr, tl.load(x_ptr))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        out = torch.relu(torch.matmul(a, b))
        _touch[(1,)](out)
        return out
