"""``evaluate.profiling.profile_call``: time goes to the labelled range around the op that spent it,
backward ops to the range of the forward op that created them."""

from __future__ import annotations

import pytest
import torch

from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent

from kernellab.evaluate.profiling import LABEL_PREFIX, attribute, label, profile_call


def _step(lin: torch.nn.Linear, x: torch.Tensor) -> None:
    with label("lin"):
        y = lin(x)
    with label("act"):
        z = torch.nn.functional.silu(y) * y
    z.sum().backward()


def _check(device: str, coverage: float) -> None:
    torch.manual_seed(0)
    lin = torch.nn.Linear(256, 256, device=device)
    x = torch.randn(512, 256, device=device, requires_grad=True)
    prof = profile_call(lambda: _step(lin, x), device=device, calls=3)
    scopes = prof.by_scope()
    assert set(scopes) == {"lin", "act"}
    backward = {(o.name, o.scope) for o in prof.ops if o.phase == "backward"}
    assert ("aten::silu_backward", "act") in backward  # found through autograd's sequence numbers
    assert any(name in ("aten::mm", "aten::addmm") and scope == "lin" for name, scope in backward)
    assert prof.coverage >= coverage, (prof.coverage, prof.unscoped_us, prof.unattributed_us)


def test_cpu_attribution():
    _check("cpu", 0.5)  # the unlabelled sum() and its backward are the caller's


@pytest.mark.gpu
def test_gpu_attribution_through_kernel_correlation():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    _check("cuda", 0.8)  # the unlabelled sum, its backward and gradient accumulation are the rest


def _event(i: int, name: str, start: int, end: int, **kw) -> FunctionEvent:
    return FunctionEvent(i, name, thread=0, start_us=start, end_us=end, use_device="cuda", **kw)


def test_a_labelled_range_on_the_device_timeline_is_not_kernel_time():
    """The profiler mirrors every labelled range onto the device timeline as a user annotation that
    spans the range's kernels: counting it as kernel time doubled the total and halved the coverage."""
    scope = _event(1, LABEL_PREFIX + "mm", 0, 100)
    op = _event(2, "aten::mm", 10, 90)
    op.cpu_parent = scope
    scope.cpu_children.append(op)
    op.append_kernel("gemm", 0, 60.0)
    kernel = _event(3, "gemm", 20, 80, device_type=DeviceType.CUDA)
    annotation = _event(4, LABEL_PREFIX + "mm", 15, 85, device_type=DeviceType.CUDA, is_user_annotation=True)
    prof = attribute([scope, op, kernel, annotation], device="cuda", calls=1, wall_us=100.0)
    assert prof.total_us == 60.0
    assert prof.unattributed_us == 0.0
    assert prof.by_scope() == {"mm": 60.0}
    assert prof.coverage == 1.0
