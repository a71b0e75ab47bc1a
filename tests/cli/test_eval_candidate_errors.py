"""What ``kernellab eval`` says about a candidate that cannot be judged: where its own code raised,
and a file that defines the reference's class instead of ModelNew."""

from __future__ import annotations

import json

import pytest
from cli_process import kernellab

RAISES = """import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.scale = helper()

    def forward(self, x):
        return x


def helper():
    raise RuntimeError("boom")
"""

ONLY_MODEL = """import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x
"""


def _eval(candidate, *extra):
    proc = kernellab("eval", "--task", "elementwise/relu", "--policy", "off", "--candidate", str(candidate),
                     "--configs", "seen", "--no-sanitize", "--json", *extra)
    return proc, json.loads(proc.stdout)


def test_a_candidate_exception_names_its_file_and_line(tmp_path):
    candidate = tmp_path / "my_kernel.py"
    candidate.write_text(RAISES)
    proc, verdict = _eval(candidate)
    assert proc.returncode == 1
    assert verdict["failed_stage"] == "load"
    # the innermost frame of the candidate's own code, not the harness's
    assert verdict["error"] == "RuntimeError: boom (at my_kernel.py:14 in helper)"


def test_only_class_model_is_no_class_modelnew(tmp_path):
    candidate = tmp_path / "kernel.py"
    candidate.write_text(ONLY_MODEL)
    proc, verdict = _eval(candidate)
    assert proc.returncode == 1
    assert verdict["failed_stage"] == "load", verdict["error"]
    assert "defines no class ModelNew" in verdict["error"] and "it defines Model" in verdict["error"]


def test_the_tasks_own_reference_still_evaluates_as_its_own_candidate():
    from kernellab.tasks.load import load_task

    reference = load_task("elementwise/relu").root / "reference.py"
    proc, verdict = _eval(reference)
    assert verdict["status"] == "passed", verdict["error"]


@pytest.fixture(autouse=True)
def _interpret(monkeypatch):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
