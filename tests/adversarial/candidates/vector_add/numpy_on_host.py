"""EXPLOIT (threat 1): the sum is computed by NumPy on the host; a token own kernel runs on the device.

``.cpu()`` and ``.numpy()`` are not library kernels, NumPy issues no aten op, and the copies back
and forth are "data movement", so neither the GPU trace's kernel names nor the CPU op log saw any
library compute. Caught on the GPU by the bytes of the device-to-host copies (input-sized: host
compute in a strict task), on the CPU by the tensors handed to host code (``.numpy()`` of inputs).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch_kernel(out_ptr):
    tl.store(out_ptr, tl.load(out_ptr))  # one element, rewritten as it is


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        host = a.float().cpu().numpy() + b.float().cpu().numpy()
        out = torch.from_numpy(host).to(device=a.device, dtype=a.dtype)
        _touch_kernel[(1,)](out)
        return out
