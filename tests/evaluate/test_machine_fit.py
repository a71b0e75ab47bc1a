"""A judgement the GPU cannot hold is an unusable input (``TooLargeError``: one line, exit 2), not a
harness error; the candidate's own shortage stays its failure."""

from __future__ import annotations

import pytest

from kernellab.evaluate.machine_fit import TooLargeError, require_judged
from kernellab.evaluate.verdict import Mode, Stage, Status, Verdict

JUDGE_OOM = ("evaluator error: OutOfMemoryError: CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a "
             "total capacity of 79.18 GiB of which 6.25 GiB is free.")


def verdict(status: Status, error: str | None, stage: Stage | None = Stage.DETERMINISM) -> Verdict:
    passed = status is Status.PASSED
    return Verdict(task={"id": "level1/38_L1Norm_"}, candidate={}, device="H100", mode=Mode.GPU, versions={},
                   policy="off", seed=0, status=status, failed_stage=stage, error=error, compiled=passed,
                   correct=passed)


def test_the_judge_out_of_device_memory_is_too_large_for_the_machine():
    with pytest.raises(TooLargeError) as raised:
        require_judged(verdict(Status.HARNESS_ERROR, JUDGE_OOM), "cuda", "level1/38_L1Norm_", alone=True)
    line = str(raised.value)
    assert line.startswith("level1/38_L1Norm_: too large for this machine: the judge ran out of device memory "
                           "at the determinism stage, with the GPU to itself")
    assert "\n" not in line


def test_other_verdicts_stand():
    # the candidate's child ran out (a failed stage): its failure; another harness error: the evaluator's
    require_judged(verdict(Status.FAILED, "CUDA out of memory in forward"), "cuda", "t", alone=True)
    require_judged(verdict(Status.HARNESS_ERROR, "evaluator error: KeyError: 'x'"), "cuda", "t", alone=True)
    require_judged(verdict(Status.PASSED, None, None), "cuda", "t", alone=False)
    require_judged(verdict(Status.HARNESS_ERROR, JUDGE_OOM), "cpu", "t", alone=False)  # no device memory on a CPU
