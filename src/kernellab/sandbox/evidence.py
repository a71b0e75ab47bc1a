"""Evidence of what a candidate actually ran, collected in the child and judged by the judge.

On a GPU: the kernels of a CUPTI trace with their streams. The launch stream is identified by a
marker kernel the harness issues on it inside the trace, because CUPTI numbers streams its own way.
On the CPU (Triton interpreter): the names of the candidate's Triton functions the interpreter ran,
and a dispatch-level log of aten ops issued outside those launches (the interpreter itself issues
aten ops, which must not be charged to the candidate).
"""

from __future__ import annotations

import types
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

MARKER_NUMEL = 7919  # a prime, so the marker fill is recognisable by its size in the trace

# Poison patterns: NaNs with a payload no arithmetic produces, so "this output element was never
# written" is recognisable bit for bit.
POISON = {torch.float32: 0x7FC0DEAD, torch.float16: 0x7E5A, torch.bfloat16: 0x7FDA, torch.float64: 0x7FF8DEADBEEFDEAD}
_INT_OF_WIDTH = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}
_EMPTY_OPS = {"aten.empty.memory_format", "aten.empty_like.default", "aten.empty_strided.default",
              "aten.new_empty.default", "aten.new_empty_strided.default"}


def as_bits(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor viewed as integers of the same width: compares bit patterns, NaNs included."""
    return t.contiguous().view(_INT_OF_WIDTH[t.element_size()])


def _signed_pattern(dtype: torch.dtype) -> int:
    bits = 8 * torch.empty(0, dtype=dtype).element_size()
    pattern = POISON[dtype]
    return pattern - (1 << bits) if pattern >= 1 << (bits - 1) else pattern


def poison_fill(t: torch.Tensor) -> None:
    """Overwrite a fresh floating tensor with its dtype's poison pattern."""
    if t.dtype not in POISON or t.numel() == 0 or not t.is_contiguous():
        return
    with torch.no_grad():
        as_bits(t).fill_(_signed_pattern(t.dtype))


def has_poison(t: torch.Tensor) -> bool:
    """Whether any element of ``t`` still holds the poison pattern: memory the candidate never wrote."""
    if t.dtype not in POISON or t.numel() == 0:
        return False
    return bool((as_bits(t) == _signed_pattern(t.dtype)).any())


class InterpreterLaunches(types.SimpleNamespace):
    """Counts interpreter grid launches by kernel name (``names``); ``depth`` > 0 while one is executing.

    No method of its own: an instance sits in the launcher wrapper's closure, where the candidate
    can reach it, and a method's ``__globals__`` would lead from there into this module."""


def track_interpreter_launches() -> InterpreterLaunches | None:
    """Wrap the interpreter's launcher so that launches are counted.

    The wrapper is what the candidate finds in Triton's place (``GridExecutor.__call__``): it is
    built ``detached``, so its globals hold nothing of this module (its cells hold the count and
    Triton's original launcher)."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return None
    from kernellab.sandbox.concealment import detached

    state = InterpreterLaunches(names=set(), depth=0)
    interpreter.GridExecutor.__call__ = detached(_counting(interpreter.GridExecutor.__call__, state))
    return state


def _counting(original, state):
    def traced_call(self, *args, **kwargs):
        state.names.add(getattr(self.fn, "__name__", "?"))
        state.depth += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            state.depth -= 1

    return traced_call


class OpLog(TorchDispatchMode):
    """Aten ops the candidate issued outside interpreted kernel launches.

    It also poisons every fresh ``torch.empty*`` the candidate allocates: on the CPU, malloc hands
    back freed blocks too unpredictably for the GPU's poison-and-free trick to work, so an output
    the kernel never writes is made recognisable at allocation instead.
    """

    def __init__(self, launches: InterpreterLaunches | None):
        super().__init__()
        self.launches = launches
        self.ops: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        outside = self.launches is None or self.launches.depth == 0
        if outside:
            self.ops.append(str(func))
        result = func(*args, **(kwargs or {}))
        if outside and str(func) in _EMPTY_OPS and isinstance(result, torch.Tensor) and result.is_floating_point():
            poison_fill(result)
        return result


def mark_launch_stream() -> None:
    """Issue a recognisable fill on the current stream; its trace record names the launch stream."""
    torch.empty(MARKER_NUMEL, dtype=torch.float32, device="cuda").fill_(1.0)


def kernel_records(prof: Any) -> list[dict[str, Any]]:
    """GPU activity of a finished ``torch.profiler.profile``: name, stream, µs, and whether it is a marker."""
    records = []
    for event in prof.profiler.kineto_results.events():
        if event.device_type() != torch.autograd.DeviceType.CUDA:
            continue
        name = event.name()
        records.append({"name": name, "stream": int(event.device_resource_id()),
                        "duration_us": event.duration_ns() / 1000.0, "start_ns": int(event.start_ns())})
    records.sort(key=lambda r: r["start_ns"])
    return records  # records[0] is the marker of mark_launch_stream()


def fingerprint(t: Any, weights: torch.Tensor) -> float:
    """A random projection of an output: the same function in the child (timed calls) and in the
    judge (the checked outputs of the same inputs), so the two can be compared number for number."""
    if not isinstance(t, torch.Tensor):
        return float("nan")
    flat = t.detach().reshape(-1)
    n = min(flat.numel(), weights.numel())
    if n == 0:
        return 0.0
    values = torch.nan_to_num(flat[:n].to(torch.float64), nan=1e300, posinf=1e300, neginf=-1e300)
    return float((values * weights[:n].to(values.device)).sum())
