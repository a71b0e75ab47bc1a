"""The gated pipeline end to end on a real task, through a real session and real child processes."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Policy

TASK = Path(__file__).parents[1] / "adversarial" / "tasks" / "vector_add"
GOOD = Path(__file__).parents[1] / "adversarial" / "candidates" / "vector_add" / "masked_add.py"

EXITS_IN_FORWARD = textwrap.dedent("""
    import torch
    import torch.nn as nn

    class ModelNew(nn.Module):
        def forward(self, a, b):
            getattr(__import__("o" + "s"), "_exit")(0)
""")


@pytest.fixture(scope="module")
def session_off():
    with EvalSession(load_task(TASK), EvalOptions(policy=Policy.OFF, request_timeout_s=60)) as session:
        yield session


def test_a_candidate_that_ends_its_process_is_an_escape_and_the_session_goes_on(session_off, tmp_path):
    path = tmp_path / "exits.py"
    path.write_text(EXITS_IN_FORWARD)
    verdict = session_off.evaluate(path)
    assert verdict.status.value == "failed" and not verdict.correct
    assert "process_escape" in verdict.violation_kinds()
    assert verdict.failed_stage.value == "load"
    after = session_off.evaluate(GOOD)
    assert after.status.value == "passed" and after.correct


def test_stages_run_in_contract_order_and_the_json_is_complete(session_off):
    verdict = session_off.evaluate(GOOD)
    names = [s.name.value for s in verdict.stages]
    order = ["static", "load", "smoke", "shape_sweep", "stability", "determinism", "edge", "sanitize", "timing",
             "holdout"]
    assert names == [n for n in order if n in names] and names[:3] == order[:3]
    document = verdict.to_dict()
    for key in ("schema", "task", "candidate", "device", "mode", "versions", "policy", "seed", "status", "compiled",
                "correct", "failed_stage", "error", "stages", "violations", "timings", "compile_seconds", "speedup",
                "holdout", "elapsed_s"):
        assert key in document
    assert document["mode"] == "interpret" or document["timings"]
