"""The harness's tensor methods never hand a call to a class the candidate gave a tensor."""

from __future__ import annotations

import torch

from kernellab.sandbox.plain import harness_method


class _Hooked(torch.Tensor):
    asked: list[str] = []

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        cls.asked.append(getattr(func, "__name__", str(func)))
        with torch._C.DisableTorchFunctionSubclass():
            return func(*args, **(kwargs or {}))


def test_a_method_taken_from_the_class_still_asks_the_tensors_class_but_a_harness_method_does_not():
    dst, src = torch.zeros(4), torch.arange(4.0)
    dst.__class__ = _Hooked  # what a candidate does to a tensor the harness reuses
    _Hooked.asked.clear()
    torch._C.TensorBase.copy_(dst, src)
    assert _Hooked.asked == ["copy_"]  # the C method hands the call to __torch_function__
    _Hooked.asked.clear()
    copy_, clone, detach = (harness_method(torch._C.TensorBase.copy_), harness_method(torch._C.TensorBase.clone),
                            harness_method(torch._C.TensorBase.detach))
    copy_(dst, src + 1)
    copied = clone(detach(dst))
    assert _Hooked.asked == []
    assert torch.equal(copied.as_subclass(torch.Tensor), torch.arange(1.0, 5.0))
