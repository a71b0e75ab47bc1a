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

