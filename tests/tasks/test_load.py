"""The task loader: schema-1 validation, config re-execution, KernelBench files, shared weights."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import build_model, load_problem
from kernellab.tasks.model import Comparator, Policy, TaskError, Visibility
from kernellab.tasks.module import build_module, module_constants

# A file shaped like KernelBench's 95_CrossEntropyLoss.py: input_shape derives from num_classes.
CROSS_ENTROPY = (Path(__file__).parents[1] / "data" / "kernelbench_cross_entropy.py").read_text()

RMSNORM = textwrap.dedent("""
    import torch
    import torch.nn as nn

    M = 64
    N = 128

    class Model(nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(n))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.weight

    def get_inputs():
        return [torch.randn(M, N)]

    def get_init_inputs():
        return [N]
""")

TOML = textwrap.dedent("""
    schema = 1
    category = "normalization"
    description = "RMSNorm"
    dtypes = ["float32", "bfloat16"]
    outputs = [{ compare = "allclose" }]
    configs = [{ M = 4096, N = 4096 }, { M = 8192, N = 1024 }, { M = 2, N = 8 }]
    edge = [{ M = 1, N = 4099 }]
    holdout = [{ M = 37, N = 1019 }]
    small = [{ M = 8, N = 96 }]
""")


def make_task(tmp_path: Path, toml: str = TOML, source: str = RMSNORM) -> Path:
    folder = tmp_path / "normalization" / "rmsnorm"
    folder.mkdir(parents=True)
    (folder / "reference.py").write_text(source)
    (folder / "task.toml").write_text(toml)
    return folder


def test_folder_task_loads_with_every_visibility(tmp_path):
    task = load_task(make_task(tmp_path))
    assert task.category == "normalization"
    assert task.dtypes == ("float32", "bfloat16")
    assert task.policy is Policy.STRICT
    assert task.outputs[0].compare is Comparator.ALLCLOSE
    assert [c.as_dict() for c in task.configs_of(Visibility.SEEN)][0] == {"M": 4096, "N": 4096}
    assert len(task.configs_of(Visibility.HOLDOUT)) == 1 and len(task.configs_of(Visibility.SMALL)) == 1


@pytest.mark.parametrize("line, message", [
    ("colour = 'red'", "unknown key 'colour'"),
    ("backward = 'yes'", "wrong type"),
    ("policy = 'lenient'", "not one of strict"),
    ("fp32_precision = 'half'", "fp32_precision"),
    ("dtypes = ['float8']", "unknown dtype"),
    ("outputs = [{ compare = 'fuzzy' }]", "compare"),
    ("outputs = [{ compare = 'values_at_indices' }]", "needs `of`"),
    ("outputs = [{ compare = 'allclose', through = 'softmax' }]", "through must be one of"),
    ("outputs = [{ compare = 'values_at_indices', of = 'x', through = 'exp' }]", "through must be one of"),
    ("holdout = [{ K = 3 }]", "'K'"),
])
def test_malformed_toml_is_one_clear_line(tmp_path, line, message):
    toml = TOML + line + "\n" if not line.startswith(("outputs", "holdout", "dtypes")) else \
        "\n".join(ln for ln in TOML.splitlines() if not ln.startswith(line.split(" ")[0])) + "\n" + line + "\n"
    with pytest.raises(TaskError) as err:
        load_task(make_task(tmp_path, toml))
    text = str(err.value)
    assert message in text and "\n" not in text and "task.toml" in text


def test_wrong_schema_version_is_rejected(tmp_path):
    with pytest.raises(TaskError, match="schema 2 is not supported"):
        load_task(make_task(tmp_path, TOML.replace("schema = 1", "schema = 2")))


def test_missing_reference_names_are_reported(tmp_path):
    with pytest.raises(TaskError, match="get_init_inputs"):
        load_task(make_task(tmp_path, source=RMSNORM.replace("def get_init_inputs", "def other")))


def test_unknown_suite_id_says_so():
    with pytest.raises(TaskError, match="no task 'nope/nothing'"):
        load_task("nope/nothing")


def test_kernelbench_file_derived_constants_follow_the_config(tmp_path):
    path = tmp_path / "95_CrossEntropyLoss.py"
    path.write_text(CROSS_ENTROPY)
    task = load_task(path)
    assert task.kernelbench and task.policy is Policy.KERNELBENCH
    config = task.configs_of(Visibility.SEEN)[0]
    assert config.as_dict()["num_classes"] == 10
    module = build_module(task.source, {"num_classes": 32000, "batch_size": 8}, where=path)
    assert module.input_shape == (32000,)  # derived constant re-evaluated, not stale
    predictions, targets = module.get_inputs()
    assert predictions.shape == (8, 32000) and targets.max() < 32000


def test_config_naming_a_non_constant_is_an_error():
    with pytest.raises(TaskError, match="not a module-level constant"):
        build_module(RMSNORM, {"Q": 3})


def test_module_constants_reads_literals_only():
    constants = module_constants(CROSS_ENTROPY)
    assert constants["batch_size"] == 4096 and constants["dim"] == 1
    assert "input_shape" not in constants  # derived, not a literal


def test_inputs_follow_config_and_dtype(tmp_path):
    task = load_task(make_task(tmp_path))
    small = task.configs_of(Visibility.SMALL)[0]
    problem = load_problem(task, small)
    (x,) = problem.inputs(seed=3, device="cpu", dtype="bfloat16")
    assert x.shape == (8, 96) and x.dtype == torch.bfloat16
    (again,) = problem.inputs(seed=3, device="cpu", dtype="bfloat16")
    assert torch.equal(x, again)
    (other,) = problem.inputs(seed=4, device="cpu", dtype="bfloat16")
    assert not torch.equal(x, other)


def test_constant_weights_are_randomized_identically(tmp_path):
    task = load_task(make_task(tmp_path))
    problem = load_problem(task, task.configs_of(Visibility.SMALL)[0])
    a = build_model(problem.module.Model, problem.init_inputs(), seed=5)
    b = build_model(problem.module.Model, problem.init_inputs(), seed=5)
    assert not torch.all(a.weight == 1.0), "a weight of ones would let a kernel ignore it"
    assert torch.equal(a.weight, b.weight)
    assert float(a.weight.detach().min()) > 0.4  # stays near the constant: variances and scales keep their sign
