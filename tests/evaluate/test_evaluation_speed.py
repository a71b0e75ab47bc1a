"""What the speed work on a full evaluation may leave out, and what it must still do.

Holdout configs are timed in one dtype each by default (checked in all), projections of checked
outputs are recorded only for the input sets timing reuses, and the child keeps what it received
mapped without ever sending the judge's own memory back.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernellab.evaluate.options import EvalOptions, resolve
from kernellab.tasks.load import load_task
from kernellab.tasks.model import TaskError

ADVERSARIAL = Path(__file__).parents[1] / "adversarial"
VECTOR_ADD = ADVERSARIAL / "tasks" / "vector_add"
GOOD_ADD = ADVERSARIAL / "candidates" / "vector_add" / "masked_add.py"


@pytest.fixture(scope="module")
def rmsnorm():
    return load_task("normalization/rmsnorm")


def test_holdouts_are_timed_in_bfloat16_where_it_is_evaluated(rmsnorm):
    resolved = resolve(rmsnorm, EvalOptions(), cuda_available=True)
    assert resolved.dtypes == ("float32", "bfloat16", "float16")
    assert resolved.holdout_timing_dtypes() == ("bfloat16",)


def test_without_bfloat16_holdouts_are_timed_in_the_first_dtype(rmsnorm):
    resolved = resolve(rmsnorm, EvalOptions(dtypes=("float16", "float32")), cuda_available=True)
    assert resolved.holdout_timing_dtypes() == ("float16",)


def test_every_dtype_or_a_chosen_few_can_still_be_timed(rmsnorm):
    everything = resolve(rmsnorm, EvalOptions(holdout_timing_dtypes="all"), cuda_available=True)
    assert everything.holdout_timing_dtypes() == ("float32", "bfloat16", "float16")
    chosen = resolve(rmsnorm, EvalOptions(holdout_timing_dtypes=("float16", "float32")), cuda_available=True)
    assert chosen.holdout_timing_dtypes() == ("float32", "float16")  # in evaluation order
    unevaluated = resolve(rmsnorm, EvalOptions(dtypes=("float32",), holdout_timing_dtypes=("float16",)),
                          cuda_available=True)
    assert unevaluated.holdout_timing_dtypes() == ()  # never checked in float16: never timed in it


@pytest.mark.parametrize("value", ["some", ("float8",)])
def test_an_unknown_holdout_timing_choice_is_refused(value):
    with pytest.raises(TaskError):
        EvalOptions(holdout_timing_dtypes=value)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_holdouts_are_checked_in_every_dtype_and_timed_in_one():
    from kernellab.evaluate.session import EvalSession

    with EvalSession(load_task(VECTOR_ADD), EvalOptions()) as session:
        verdict = session.evaluate(GOOD_ADD)
    assert verdict.status.value == "passed", verdict.error
    holdout = next(s for s in verdict.stages if s.name.value == "holdout")
    assert {c.dtype for c in holdout.configs} == {"float32", "float16", "bfloat16"}
    assert verdict.holdout.timings and {t.dtype for t in verdict.holdout.timings} == {"bfloat16"}
    assert len({t.dtype for t in verdict.timings}) == 3  # seen configs: every dtype


def _ctx(task, options: EvalOptions | None = None, device: str = "cuda"):
    from types import SimpleNamespace

    options = options or EvalOptions()
    resolved = resolve(task, options, cuda_available=True)
    return SimpleNamespace(session=SimpleNamespace(device=device, resolved=resolved, options=resolved.options))


def _case(task, visibility, dtype: str = "bfloat16", seed: int = 0, variant: str | None = None,
          grads: bool = False):
    from types import SimpleNamespace

    config = task.configs_of(visibility)[0]
    return SimpleNamespace(problem=SimpleNamespace(config=config), dtype=dtype, seed=seed, variant=variant,
                           grad_outputs=[torch.zeros(1)] if grads else None, mutated_indices=lambda: [])


def test_only_the_input_sets_timing_reuses_are_projected(rmsnorm):
    from kernellab.evaluate import seeds
    from kernellab.evaluate.checking import timing_reuses
    from kernellab.tasks.model import Visibility

    ctx = _ctx(rmsnorm)
    seen, holdout = Visibility.SEEN, Visibility.HOLDOUT
    for k in (0, 1, 5):  # the sweep's trials and the timing sets after them
        assert timing_reuses(ctx, _case(rmsnorm, seen, "float32", seeds.trial(0, seeds.SWEEP, k)))
    assert timing_reuses(ctx, _case(rmsnorm, holdout, "bfloat16", seeds.trial(0, seeds.HOLDOUT, 0)))
    never = [_case(rmsnorm, seen, seed=seeds.STABILITY, variant="large"),  # stability variants
             _case(rmsnorm, seen, seed=seeds.STABILITY),
             _case(rmsnorm, Visibility.EDGE, seed=seeds.EDGE),
             _case(rmsnorm, Visibility.SMALL),
             _case(rmsnorm, seen, seed=seeds.BACKWARD, grads=True),  # forward+backward rows check no outputs
             _case(rmsnorm, holdout, "float32", seeds.HOLDOUT)]  # holdouts are timed in bfloat16 only
    assert not any(timing_reuses(ctx, case) for case in never)
    assert not timing_reuses(ctx, _case(rmsnorm, seen, seed=0), backward=True)
    every = _ctx(rmsnorm, EvalOptions(holdout_timing_dtypes="all"))
    assert timing_reuses(every, _case(rmsnorm, holdout, "float32", seeds.HOLDOUT))
    assert not timing_reuses(_ctx(rmsnorm, EvalOptions(time_holdout=False)), _case(rmsnorm, holdout, seed=seeds.HOLDOUT))
    assert not timing_reuses(_ctx(rmsnorm, device="cpu"), _case(rmsnorm, seen, seed=0))  # no timing there
