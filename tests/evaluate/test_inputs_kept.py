"""Inputs a task updates in place are read through the memory the judge handed over: a call that
resizes one, or points it elsewhere, is an output-contract violation, not a comparison it chose."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Policy

TASK = Path(__file__).parents[2] / "src" / "kernellab" / "tasks" / "suite" / "optimizer" / "ema_update"

CANDIDATE = textwrap.dedent("""
    import torch
    import torch.nn as nn


    class ModelNew(nn.Module):
        def __init__(self, decay):
            super().__init__()
            self.decay = decay

        def forward(self, ema, param):
            {body}
""")

BODIES = {
    # nothing computed; the updated input left empty, which compares as no error when broadcast
    "emptied": "ema.resize_(0, ema.numel())",
    "pointed_elsewhere": "ema.set_(torch.lerp(ema, param, 1 - self.decay).untyped_storage())",
    # the same, with the tensor's own methods shadowed to report the memory it was handed
    "pointed_elsewhere_shadowed": ("s, o, st = ema.untyped_storage(), ema.storage_offset(), ema.stride(); "
                                   "ema.set_(torch.lerp(ema, param, 1 - self.decay).untyped_storage()); "
                                   "ema.untyped_storage = lambda: s; ema.storage_offset = lambda: o; "
                                   "ema.stride = lambda: st"),
    "honest": "ema.lerp_(param, 1 - self.decay)",
}


@pytest.fixture(scope="module")
def session():
    with EvalSession(load_task(TASK), EvalOptions(policy=Policy.OFF, request_timeout_s=120)) as s:
        yield s


@pytest.mark.parametrize("name", sorted(BODIES))
def test_an_updated_input_is_read_where_it_was_handed_over(session, tmp_path, name):
    path = tmp_path / f"{name}.py"
    path.write_text(CANDIDATE.format(body=BODIES[name]))
    verdict = session.evaluate(path)
    if name == "honest":
        assert verdict.status.value == "passed" and verdict.correct, verdict.error
        return
    assert verdict.status.value == "failed" and not verdict.correct
    assert "output_contract" in verdict.violation_kinds(), verdict.error
    assert "changed the size, strides or memory of input 0" in (verdict.error or "")
