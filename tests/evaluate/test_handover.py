"""Judge memory handed to a child is never the judge's own (invariant 5): the child gets copies, the
judge's references come from its own values, and what was handed over is compared after the call.

Real sessions and children on fixture tasks of the adversarial corpus. On the CPU tensors cross by
value, so the child sends back what it holds; the GPU tests (marked) show the CUDA IPC path itself.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernellab.evaluate import handover, seeds
from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.reference import build_case, ensure_gradients
from kernellab.evaluate.session import EvalSession
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Visibility

ADVERSARIAL = Path(__file__).parents[1] / "adversarial"
OPTIONS = EvalOptions(request_timeout_s=60, time_holdout=False, compile_baseline=False, timing_budget_s=0.2)


def _backward_case(session: EvalSession, dtype: str = "float32"):
    config = session.task.configs_of(Visibility.SMALL)[0]
    return session.case(config, dtype, 23, backward=True)


def test_reference_gradients_come_from_the_judges_own_grad_output():
    """A write into the grad_output that was handed over (as a child writes through CUDA IPC) leaves
    the float64 reference gradients, made after the call, what they would have been."""
    with EvalSession(load_task(ADVERSARIAL / "tasks" / "row_scale"), OPTIONS) as session:
        case = _backward_case(session)
        handed, own = case.grad_outputs, case.pristine_grad_outputs
        assert all(h.data_ptr() != o.data_ptr() for h, o in zip(handed, own))
        for g in handed:
            g.zero_()  # what zeroes_grad_output.py does to the memory it is handed
        assert ensure_gradients(case)
        untouched = build_case(case.problem, case.dtype, case.seed, session.device, backward=True)
        ensure_gradients(untouched)
        assert case.ref_grads.keys() == untouched.ref_grads.keys()
        for name, ref in case.ref_grads.items():
            assert float(ref.abs().max()) > 0 and torch.equal(ref, untouched.ref_grads[name]), name
        assert handover.first_change(case.grad_outputs, case.pristine_grad_outputs, "grad_output") == "grad_output[0]"
        case.restore_inputs()  # before the next call the handed copy holds the judge's values again
        assert handover.first_change(case.grad_outputs, case.pristine_grad_outputs) is None


def test_first_change_compares_bits_through_nested_containers():
    own = {"init_inputs": [3, torch.tensor([1.0, -0.0])], "state": {"w": torch.tensor([float("nan"), 2.0])}}
    assert handover.first_change(handover.copies(own), own) is None
    signed_zero = handover.copies(own)
    signed_zero["init_inputs"][1][1] = 0.0  # -0.0 == 0.0, but not bit for bit
    assert handover.first_change(signed_zero, own) == "init_inputs[1]"
    other_nan = handover.copies(own)
    other_nan["state"]["w"].view(torch.int32)[0] ^= 1  # another NaN payload
    assert handover.first_change(other_nan, own) == "state.w"
    assert handover.first_change({"init_inputs": own["init_inputs"]}, own) == "state"


@pytest.fixture(scope="module")
def row_scale():
    with EvalSession(load_task(ADVERSARIAL / "tasks" / "row_scale"), OPTIONS) as session:
        yield session


@pytest.fixture(scope="module")
def layernorm():
    with EvalSession(load_task(ADVERSARIAL / "tasks" / "layernorm"), OPTIONS) as session:
        yield session


def test_a_backward_that_writes_its_grad_output_is_an_input_mutation(row_scale):
    verdict = row_scale.evaluate(ADVERSARIAL / "candidates" / "row_scale" / "zeroes_grad_output.py")
    assert not verdict.correct and verdict.failed_stage.value == "backward"
    assert any(v.kind.value == "input_mutation" and "grad_output" in v.detail for v in verdict.violations)
    after = row_scale.evaluate(ADVERSARIAL / "candidates" / "row_scale" / "own_buffers.py")
    assert after.status.value == "passed" and after.correct, after.error


def test_weights_written_at_instantiation_are_an_input_mutation_and_the_next_candidate_gets_the_judges(layernorm):
    verdict = layernorm.evaluate(ADVERSARIAL / "candidates" / "layernorm" / "writes_handed_weights.py")
    assert not verdict.correct
    assert any(v.kind.value == "input_mutation" and "state.norm.weight" in v.detail for v in verdict.violations)
    config = layernorm.task.configs_of(Visibility.SMALL)[0]
    kept = layernorm.case(config, "float32", 0)
    fresh = build_case(kept.problem, "float32", 0, layernorm.device, precision_probe=False)
    assert handover.first_change(kept.state, fresh.state) is None  # the judge's weights are untouched
    after = layernorm.evaluate(ADVERSARIAL / "candidates" / "layernorm" / "two_pass.py")
    assert after.status.value == "passed" and after.correct, after.error


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_the_gpu_a_zeroed_grad_output_leaves_the_references_alone():
    """Over CUDA IPC the child writes the judge's memory itself: before handed-over copies, the
    reference gradients followed the zeros and this candidate passed."""
    with EvalSession(load_task(ADVERSARIAL / "tasks" / "row_scale"), OPTIONS) as session:
        verdict = session.evaluate(ADVERSARIAL / "candidates" / "row_scale" / "zeroes_grad_output.py")
        assert "input_mutation" in verdict.violation_kinds() and not verdict.correct
        seen = session.task.configs_of(Visibility.SEEN)[0]
        case = session.case(seen, session.resolved.dtypes[0], session.options.seed + seeds.BACKWARD, backward=True)
        untouched = build_case(case.problem, case.dtype, case.seed, "cuda", backward=True, precision_probe=False)
        ensure_gradients(untouched)
        for name, ref in case.ref_grads.items():
            assert torch.equal(ref, untouched.ref_grads[name]), name


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_the_gpu_weights_written_at_instantiation_never_reach_the_next_candidate():
    with EvalSession(load_task(ADVERSARIAL / "tasks" / "layernorm"), OPTIONS) as session:
        verdict = session.evaluate(ADVERSARIAL / "candidates" / "layernorm" / "writes_handed_weights.py")
        assert "input_mutation" in verdict.violation_kinds()
        after = session.evaluate(ADVERSARIAL / "candidates" / "layernorm" / "two_pass.py")
        assert after.status.value == "passed" and after.correct, after.error
