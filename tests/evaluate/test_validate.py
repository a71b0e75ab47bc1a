"""The task validator on real tasks: degenerate ones rejected for the right reason, sound ones kept."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import torch

from kernellab.evaluate import validate
from kernellab.evaluate.validate import shard, validate_task
from kernellab.tasks.load import load_task
from kernellab.tasks.model import TaskError

ADVERSARIAL = Path(__file__).parents[1] / "adversarial"
MANIFEST = tomllib.loads((ADVERSARIAL / "manifest.toml").read_text())
DEGENERATE = [c for c in MANIFEST["case"] if c.get("kind") == "degenerate_task"]
WORDS = {"near_constant_output": "near-constant output", "input_independent": "insensitive to input"}


@pytest.mark.parametrize("case", DEGENERATE, ids=[c["task"] for c in DEGENERATE])
def test_degenerate_tasks_are_rejected_with_their_reason(case):
    report = validate_task(load_task(ADVERSARIAL / "degenerate_tasks" / case["task"]), "cpu", 1 << 16)
    assert not report.passed
    text = " ".join(report.failures)
    assert WORDS[case["reason"]] in text, text
    if case.get("input"):
        assert repr(case["input"]) in text


@pytest.mark.parametrize("name", ["rmsnorm", "vector_add", "matmul", "sgd_momentum", "softmax", "logsumexp",
                                  "layernorm", "row_scale"])
def test_sound_fixture_tasks_pass(name):
    report = validate_task(load_task(ADVERSARIAL / "tasks" / name), "cpu", 1 << 16)
    assert report.passed, report.failures
    assert report.checked_configs


@pytest.mark.parametrize("folder", [ADVERSARIAL / "tasks" / "sgd_momentum",
                                    *(ADVERSARIAL / "degenerate_tasks" / c["task"] for c in DEGENERATE)],
                         ids=lambda f: f.name)
def test_large_configs_are_judged_alike_with_inputs_drawn_again_and_outputs_sampled(monkeypatch, folder):
    """What keeps a 7B-layer optimizer step within a GPU's memory (seed 0's inputs kept, the others
    drawn again; spread and sensitivity on a sample of the output) leaves every verdict as it was."""
    task = load_task(folder)
    whole = validate_task(task, "cpu", 1 << 16)
    monkeypatch.setattr(validate, "KEEP_BYTES", 0)
    monkeypatch.setattr(validate, "SAMPLE", 256)
    lean = validate_task(task, "cpu", 1 << 16)
    assert lean.passed == whole.passed
    assert [f.split(" (")[0] for f in lean.failures] == [f.split(" (")[0] for f in whole.failures]


def test_weights_that_do_not_matter_are_found(tmp_path):
    folder = tmp_path / "ignored_weight"
    folder.mkdir()
    (folder / "reference.py").write_text(
        "import torch\nimport torch.nn as nn\nN = 64\n\n"
        "class Model(nn.Module):\n"
        "    def __init__(self, n):\n"
        "        super().__init__()\n"
        "        self.w = nn.Parameter(torch.randn(n))\n"
        "    def forward(self, x):\n"
        "        return x * 2 + 0 * self.w\n\n"
        "def get_inputs():\n    return [torch.randn(8, N)]\n\n"
        "def get_init_inputs():\n    return [N]\n")
    report = validate_task(load_task(folder), "cpu", 1 << 16)
    assert any("insensitive to the weights" in f for f in report.failures), report.failures


def _one_file_task(tmp_path: Path, name: str, forward: str, inputs: str) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "reference.py").write_text(
        "import torch\nimport torch.nn as nn\nN = 4096\n\n"
        "class Model(nn.Module):\n"
        f"    def forward(self, x):\n        {forward}\n\n"
        f"def get_inputs():\n    return [{inputs}]\n\n"
        "def get_init_inputs():\n    return []\n")
    return folder


def test_a_reference_that_changes_between_runs_is_rejected(tmp_path):
    folder = _one_file_task(tmp_path, "noisy", "return x + 1e-6 * torch.rand_like(x)", "torch.randn(8, N)")
    report = validate_task(load_task(folder), "cpu", 1 << 16)
    assert any("not deterministic" in f for f in report.failures), report.failures


def test_summation_order_differences_at_float64_rounding_are_deterministic_enough(tmp_path):
    # Each run adds the row in another order, as a GPU scan may: the results differ in the last bits
    # (sin: values with all 53 bits, since float32 draws sum exactly in float64).
    folder = _one_file_task(tmp_path, "reordered", "return x.sin()[:, torch.rand(x.shape[1]).argsort()].cumsum(1)[:, -1:] * x",
                            "torch.randn(8, N)")
    report = validate_task(load_task(folder), "cpu", 1 << 16)
    assert report.passed, report.failures


def test_inputs_holding_inf_by_design_do_not_make_the_scale_infinite(tmp_path):
    folder = _one_file_task(tmp_path, "overflow_flag", "return torch.where(torch.isfinite(x), x * 3, 0.0)",
                            "torch.cat([torch.randn(8, N), torch.full((8, 1), float('inf'))], 1)")
    report = validate_task(load_task(folder), "cpu", 1 << 16)
    assert report.passed, report.failures


def test_finite_inputs_whose_squares_overflow_do_not_read_as_near_constant(tmp_path):
    folder = _one_file_task(tmp_path, "huge_values", "return x * 3",
                            "torch.randn(8, N, dtype=torch.float64) * 1e200")
    report = validate_task(load_task(folder), "cpu", 1 << 16)
    assert report.passed, report.failures
    assert validate._rms([torch.tensor([3e200, -4e200, float("inf")], dtype=torch.float64)]) == \
        pytest.approx(((9 + 16) / 2) ** 0.5 * 1e200)


def test_shards_partition_the_list():
    items = list(range(10))
    parts = [shard(items, f"{i}/3") for i in (1, 2, 3)]
    assert sorted(x for p in parts for x in p) == items
    with pytest.raises(TaskError):
        shard(items, "4/3")
