"""EXPLOIT (threat 10): the sum is torch's own ``add`` under ``torch.utils._mode_utils.no_dispatch()``
(``torch._C._DisableTorchDispatch``: dispatch modes are skipped); a one-element own Triton kernel runs
per call. The CPU's op log, a ``TorchDispatchMode``, never sees the ``add``. On a GPU the trace shows
torch's add kernel; on the CPU the profiler's ``RecordFunction`` records it (``evidence._AllOps``)."""
import torch
import torch.nn as nn
import triton
import triton.language as tl
from torch.utils._mode_utils import no_dispatch

_LIBRARY_ADD = vars(torch)["a" + "dd"]


@triton.jit
def _touch(p):
    tl.store(p, tl.load(p))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, a, b):
        with no_dispatch():
            out = _LIBRARY_ADD(a, b)
        _touch[(1,)](out)
        return out
