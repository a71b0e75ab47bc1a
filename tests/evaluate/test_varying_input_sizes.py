"""A reference whose inputs change size with the draw (a buffer sized by a random total, as suites
that pack variable-length rows write them): every check still runs on values that fit."""

from __future__ import annotations

import textwrap

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Policy

TASK_TOML = textwrap.dedent("""
    schema = 1
    category = "reductions"
    description = "Sums of a packed buffer of variable-length rows, and of its row lengths."
    dtypes = ["float32"]
    policy = "off"
    outputs = [{ compare = "allclose" }]
    configs = [{ ROWS = 8 }]
    small = [{ ROWS = 8 }]
""")

PACKED = textwrap.dedent("""
    import torch
    import torch.nn as nn

    ROWS = 8


    class Model(nn.Module):
        def forward(self, lengths, values):
            return torch.stack([values.sum(), lengths.to(values.dtype).sum()])


    def get_inputs():
        lengths = torch.randint(1, 1000, (ROWS,))
        return [lengths, torch.randn(int(lengths.sum()))]


    def get_init_inputs():
        return []
""")


def test_a_reference_whose_inputs_change_size_gets_a_verdict(tmp_path):
    task = tmp_path / "packed_rows"
    task.mkdir()
    (task / "task.toml").write_text(TASK_TOML)
    (task / "reference.py").write_text(PACKED)
    candidate = tmp_path / "candidate.py"
    candidate.write_text(PACKED.replace("class Model(", "class ModelNew("))
    with EvalSession(load_task(task), EvalOptions(policy=Policy.OFF, request_timeout_s=120, trials=2)) as session:
        verdict = session.evaluate(candidate)
    assert verdict.status.value == "passed" and verdict.correct, verdict.error
    timing = next(s for s in verdict.stages if s.name.value == "timing")
    assert timing.passed and timing.skipped, timing  # checked fresh values, or said why it could not
