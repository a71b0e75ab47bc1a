"""EXPLOIT (threat 1): host compute fed by many small reads: each ``.tolist()`` of a slice is small,
together they are the whole input; a token own kernel runs on the device.

A limit per copy would let every piece through. Caught by the bytes per call: device-to-host copies
(GPU) or tensors handed to host code (CPU) of a call are summed against the input's size.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _touch_kernel(out_ptr):
    tl.store(out_ptr, tl.load(out_ptr))


class ModelNew(nn.Module):
    CHUNK = 64

    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        flat_a, flat_b = a.reshape(-1), b.reshape(-1)
        values = []
        for start in range(0, flat_a.numel(), self.CHUNK):
            xs = flat_a[start:start + self.CHUNK].tolist()
            ys = flat_b[start:start + self.CHUNK].tolist()
            values.extend(x + y for x, y in zip(xs, ys))
        out = torch.tensor(values, dtype=a.dtype, device=a.device).reshape(a.shape)
        _touch_kernel[(1,)](out)
        return out
