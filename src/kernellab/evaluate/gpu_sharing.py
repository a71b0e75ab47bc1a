"""How an evaluation shares its GPU with other processes on it (a campaign's workers, parallel shards).

Sharing is optimistic. Correctness checks of several processes overlap on one GPU; what must have
the GPU to itself runs inside guards that the process installs (a campaign worker installs its GPU
lock's ``exclusive`` and ``alone`` holds):

- every timing (``stages.performance.time_configs``) runs inside ``exclusive``: no other kernel runs
  beside it;
- an evaluation that ran out of device memory beside the others runs again inside ``alone``.
  Overlapping evaluations of large tasks (tens of GB each at the largest holdout configs) can exhaust
  even an 80 GB GPU; the verdict would be a harness error (the judge ran out) or a failed stage (the
  candidate's child did), neither saying anything about the candidate. The session drops its cases
  and evaluates again once every other evaluation on the GPU has ended.

Without a guard (``kernellab eval``, a lone session) both are no-ops and an out-of-memory is reported.
``KERNELLAB_GPU_SHARED_BY`` (set by the local backend for each worker: how many workers share its
GPU) divides the memory a session keeps for cases, so N sessions together keep what one alone would.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from contextlib import AbstractContextManager

SHARED_BY_ENV = "KERNELLAB_GPU_SHARED_BY"

Guard = Callable[[], AbstractContextManager[object]]
_exclusive: Guard | None = None
_alone: Guard | None = None

# What a device allocation failure says: torch's OutOfMemoryError raised in the judge, or a CUDA error
# text coming back from the candidate's child (its context or a copy could not be allocated).
_OUT_OF_MEMORY_MARKERS = ("out of memory", "cudaErrorMemoryAllocation")


def set_guards(exclusive: Guard | None, alone: Guard | None = None) -> None:
    """``exclusive``: every timing runs inside it (no other kernel on the GPU). ``alone``: the retry of
    an evaluation that ran out of device memory runs inside it, once no other evaluation holds memory
    on the GPU (default: ``exclusive``). None: no guards."""
    global _exclusive, _alone
    _exclusive = exclusive
    _alone = alone or exclusive


def has_guards() -> bool:
    return _exclusive is not None


def exclusive() -> AbstractContextManager[object]:
    """The GPU to this process for the block (a timing), where a guard is installed."""
    return _exclusive() if _exclusive is not None else contextlib.nullcontext()


def alone() -> AbstractContextManager[object]:
    """The GPU and its memory to this process for the block, where a guard is installed."""
    return _alone() if _alone is not None else contextlib.nullcontext()


def out_of_device_memory(error: str | None) -> bool:
    return bool(error) and any(marker in error for marker in _OUT_OF_MEMORY_MARKERS)


def give_back_memory() -> None:
    """Return this process's cached but unused device memory to the GPU: PyTorch's allocator keeps what
    an evaluation freed (often tens of GB), which the other processes on the GPU cannot use."""
    import sys

    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.ipc_collect()  # blocks a candidate child has let go of
        torch.cuda.empty_cache()


def shared_by() -> int:
    """How many evaluating processes share this process's GPU (1 unless told)."""
    value = os.environ.get(SHARED_BY_ENV, "")
    return max(1, int(value)) if value.isdigit() else 1
