"""The timing stage measures the eager reference's peak memory next to the candidate's, on a GPU.

A vector add allocates its output and nothing else, both in eager PyTorch and in the candidate, so
both peaks are at least one output's bytes and their ratio is near 1: "peak memory vs eager" in the
report is filled from these two fields.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Policy

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

TASK = Path(__file__).parents[1] / "adversarial" / "tasks" / "vector_add"
GOOD = Path(__file__).parents[1] / "adversarial" / "candidates" / "vector_add" / "masked_add.py"


def test_each_timing_row_has_the_eager_peak_next_to_the_candidates():
    with EvalSession(load_task(TASK), EvalOptions(policy=Policy.OFF, request_timeout_s=120)) as session:
        verdict = session.evaluate(GOOD)
    assert verdict.status.value == "passed" and verdict.timings
    for t in verdict.timings:
        assert t.peak_mem_bytes and t.eager_peak_mem_bytes, t
        assert 0.5 <= t.peak_mem_bytes / t.eager_peak_mem_bytes <= 2.0, t
