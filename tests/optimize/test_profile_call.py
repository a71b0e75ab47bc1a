"""``evaluate.profiling.profile_call``: time goes to the labelled range around the op that spent it,
backward ops to the range of the forward op that created them."""

from __future__ import annotations

import pytest
import torch

from kernellab.evaluate.profiling import label, profile_call


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
    _check("cuda", 0.6)  # the unlabelled sum, its backward and gradient accumulation are the rest
