"""The float64 reference falls back to float32 only for an op float64 cannot run, never because the
device was short of memory (a float32 reference would quietly loosen every check of that case)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from kernellab.evaluate.reference import build_case
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import load_problem
from kernellab.tasks.model import Visibility

VECTOR_ADD = Path(__file__).parents[1] / "adversarial" / "tasks" / "vector_add"

FLOAT64_FAILS = '''
import torch
import torch.nn as nn

N = 1000


class Model(nn.Module):
    def forward(self, a, b):
        if a.dtype == torch.float64:
            raise {error}
        return a + b


def get_inputs():
    return [torch.randn(N), torch.randn(N)]


def get_init_inputs():
    return []
'''


def _task(tmp_path: Path, error: str):
    folder = tmp_path / "vector_add"
    shutil.copytree(VECTOR_ADD, folder)
    (folder / "reference.py").write_text(FLOAT64_FAILS.format(error=error))
    return load_task(folder)


def test_an_op_without_float64_falls_back_to_a_float32_reference(tmp_path):
    task = _task(tmp_path, 'NotImplementedError("no float64 kernel for this op")')
    case = build_case(load_problem(task, task.configs_of(Visibility.SMALL)[0]), "float32", 0, "cpu")
    assert case.float64_fallback
    assert torch.allclose(case.ref_outputs[0], (case.inputs[0] + case.inputs[1]).double())


def test_a_device_out_of_memory_is_raised_not_taken_for_a_missing_op(tmp_path):
    task = _task(tmp_path, 'torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 3.91 GiB")')
    with pytest.raises(torch.OutOfMemoryError):
        build_case(load_problem(task, task.configs_of(Visibility.SMALL)[0]), "float32", 0, "cpu")
