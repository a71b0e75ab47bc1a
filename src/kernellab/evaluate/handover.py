"""Judge memory handed to a child is never the judge's own (invariant 5 of ARCHITECTURE.md).

On the GPU, every tensor the judge sends crosses by CUDA IPC: the child maps the judge's very memory
and can write into it, during the call or later. A reference computed from that memory afterwards
(the float64 gradients of a backward case are made lazily, after the first call), or weights reused
for the next candidate, would then follow whatever the candidate wrote. So the judge keeps its own
values and hands over copies (``copies``; ``Case.inputs`` and ``Case.grad_outputs`` are such copies,
restored before each call), and compares what it handed over with its own after the call
(``first_change``): a difference is an ``input_mutation``, since the candidate wrote memory it was
only given to read. On the CPU tensors cross by value, so the child sends back what it holds after
the call, and the same comparison applies.

Cost: one copy of what is handed over (a backward case holds its grad_outputs twice; weights and
init arguments are copied once per instantiation) and one bitwise comparison per call.
"""

from __future__ import annotations

from typing import Any

import torch

from kernellab.sandbox.evidence import as_bits


def copies(value: Any) -> Any:
    """``value`` with every tensor in it (lists, tuples, dict values) replaced by a copy."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(copies(v) for v in value)
    if isinstance(value, dict):
        return {k: copies(v) for k, v in value.items()}
    return value


def first_change(handed: Any, own: Any, name: str = "") -> str | None:
    """The name of the first tensor of ``handed`` whose bits differ from the judge's ``own``, or None.

    A tensor missing from ``handed``, or of another shape, dtype or type, counts as changed."""
    if isinstance(own, torch.Tensor):
        if not isinstance(handed, torch.Tensor) or not same_bits(handed, own):
            return name or "a tensor"
        return None
    if isinstance(own, dict):
        if not isinstance(handed, dict):
            return name or "a dict"
        for key, value in own.items():
            changed = first_change(handed.get(key), value, f"{name}.{key}" if name else str(key))
            if changed:
                return changed
        return None
    if isinstance(own, (list, tuple)):
        if not isinstance(handed, (list, tuple)) or len(handed) != len(own):
            return name or "a list"
        for i, (mine, theirs) in enumerate(zip(handed, own)):
            changed = first_change(mine, theirs, f"{name}[{i}]")
            if changed:
                return changed
    return None


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN payloads and signed zeros included), on ``b``'s device."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a = a.detach().to(b.device)
    if a.is_floating_point():
        return bool(torch.equal(as_bits(a), as_bits(b.detach())))
    return bool(torch.equal(a, b.detach()))
