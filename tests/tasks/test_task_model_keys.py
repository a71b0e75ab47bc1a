"""Task-model keys the importers need: fixed thresholds, keep_init, positive-definite stability inputs,
scalar outputs, torch.layout arguments across the channel, lists of tensors refused in one line."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

from kernellab.evaluate.reference import build_case
from kernellab.evaluate.tolerance import compare_output
from kernellab.sandbox.channel import dumps, loads
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import (build_model, flatten_outputs, load_problem, perturb_for_domain)
from kernellab.tasks.model import Comparator, InputDomain, TaskError, Visibility

REFERENCE = textwrap.dedent("""
    import torch

    N = 64

    class Model(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(n))
            self.bias = torch.nn.Parameter(torch.zeros(n))

        def forward(self, x):
            return x * self.weight + self.bias

    def get_inputs():
        return [torch.randn(8, N)]

    def get_init_inputs():
        return [N]
""")


def _task(tmp_path: Path, toml: str, reference: str = REFERENCE) -> Path:
    folder = tmp_path / "t"
    folder.mkdir(exist_ok=True)
    (folder / "reference.py").write_text(reference)
    (folder / "task.toml").write_text('schema = 1\ncategory = "test"\n' + textwrap.dedent(toml))
    return folder


def test_fixed_thresholds_load_per_dtype_and_judge_as_declared(tmp_path):
    task = load_task(_task(tmp_path, """
        outputs = [{ compare = "fixed", atol = { float16 = 5e-3, float32 = 1e-5, "*" = 0.0 }, rtol = 1e-5 }]
    """))
    spec = task.outputs[0]
    assert spec.compare is Comparator.FIXED
    assert spec.fixed.for_dtype("float32") == {"atol": 1e-5, "rtol": 1e-5}
    assert spec.fixed.for_dtype("int64") == {"atol": 0.0, "rtol": 1e-5}
    ref = torch.linspace(-1, 1, 100, dtype=torch.float64)
    assert compare_output(ref.float() + 5e-6, ref, spec, tolerance=0.0).passed
    failed = compare_output(ref.float() + 5e-4, ref, spec, tolerance=1.0)  # the eager-scaled tolerance is ignored
    assert not failed.passed and "atol 1e-05" in failed.problem
    # float16: the reference is rounded to float16 first, so a correctly rounded result passes tight thresholds
    assert compare_output((ref * 3.3).half(), ref * 3.3, spec, tolerance=0.0).passed


def test_fixed_cosine_l1_rmse(tmp_path):
    task = load_task(_task(tmp_path, 'outputs = [{ compare = "fixed", cosine = 0.99, l1 = 0.05, rmse = 0.1 }]\n'))
    spec = task.outputs[0]
    ref = torch.randn(1000, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    assert compare_output((ref + 0.01 * torch.randn(1000, dtype=torch.float64)).float(), ref, spec, 0.0).passed
    bad = compare_output((ref + 0.5 * torch.randn(1000, dtype=torch.float64)).float(), ref, spec, 0.0)
    assert not bad.passed and "cosine" in bad.problem and "rmse" in bad.problem


@pytest.mark.parametrize("toml, message", [
    ('outputs = [{ atol = 1e-5 }]\n', 'needs compare = "fixed"'),
    ('outputs = [{ compare = "fixed" }]\n', "needs one of atol"),
    ('outputs = [{ compare = "fixed", atol = { float8 = 1.0 } }]\n', "unknown dtype 'float8'"),
    ('outputs = [{ compare = "fixed", rmse = -1 }]\n', "non-negative"),
    ('keep_init = "weight"\n', "keep_init has the wrong type"),
])
def test_bad_fixed_and_keep_init_keys_are_one_line_errors(tmp_path, toml, message):
    with pytest.raises(TaskError, match=message.replace("(", r"\(")):
        load_task(_task(tmp_path, toml))


def test_keep_init_keeps_a_deliberate_constant_weight(tmp_path):
    kept = load_task(_task(tmp_path, 'keep_init = ["weight"]\n'))
    problem = load_problem(kept, kept.configs_of(Visibility.SEEN)[0])
    model = build_model(problem.module.Model, problem.init_inputs(), 1234, kept.keep_init)
    assert torch.equal(model.weight, torch.ones(64))  # kept as the task initialised it
    assert not torch.equal(model.bias, torch.zeros(64))  # not named: randomised as before
    plain = build_model(problem.module.Model, problem.init_inputs(), 1234)
    assert not torch.equal(plain.weight, torch.ones(64))
    (tmp_path / "plain").mkdir()
    assert kept.sha256 != load_task(_task(tmp_path / "plain", "")).sha256  # resumable state files see the change


@pytest.mark.parametrize("kind", ["large", "tiny", "mixed", "heavy_tailed", "shifted_up", "shifted_down",
                                  "constant_rows", "positive_rows"])
def test_positive_definite_stability_inputs_stay_positive_definite(kind):
    x = torch.empty(3, 16, 16)
    y = perturb_for_domain(x, InputDomain.POSITIVE_DEFINITE, kind, torch.Generator().manual_seed(1))
    assert y.shape == x.shape and y.dtype == x.dtype
    assert torch.allclose(y, y.transpose(-1, -2))
    assert bool((torch.linalg.cholesky_ex(y.double()).info == 0).all())


SCALAR = textwrap.dedent("""
    import torch

    N = 32

    class Model(torch.nn.Module):
        def forward(self, x, layout):
            assert layout is torch.strided
            return (x * x).sum().item()

    def get_inputs():
        return [torch.randn(N), torch.strided]

    def get_init_inputs():
        return []
""")


def test_a_reference_returning_a_python_float_gives_a_0d_float64_output(tmp_path):
    assert flatten_outputs((1.5, 2, True))[0].dtype == torch.float64
    assert [t.dtype for t in flatten_outputs((1.5, 2, True))] == [torch.float64, torch.int64, torch.bool]
    task = load_task(_task(tmp_path, "", SCALAR))
    case = build_case(load_problem(task, task.configs_of(Visibility.SEEN)[0]), "float32", 0, "cpu")
    assert case.ref_outputs[0].shape == () and case.ref_outputs[0].dtype == torch.float64
    assert case.expected_outputs[0].dtype == torch.float64


def test_layouts_and_dtypes_cross_the_channel():
    assert loads(dumps([torch.strided, torch.sparse_coo, torch.float16, {"d": torch.bfloat16}])) == \
        [torch.strided, torch.sparse_coo, torch.float16, {"d": torch.bfloat16}]


def test_a_list_of_tensors_as_one_input_is_refused_in_one_line(tmp_path):
    source = SCALAR.replace("def forward(self, x, layout):", "def forward(self, xs, layout):").replace(
        "[torch.randn(N), torch.strided]", "[[torch.randn(N), torch.randn(N)], torch.strided]")
    task = load_task(_task(tmp_path, "", source))
    problem = load_problem(task, task.configs_of(Visibility.SEEN)[0])
    with pytest.raises(TaskError, match="input 'xs' is a list of tensors; pass each tensor as its own"):
        problem.inputs(0, "cpu", "float32")


def test_list_valued_configs_hash_and_load(tmp_path):
    source = REFERENCE.replace("N = 64", "N = 64\nSIZES = [1, 2]")
    task = load_task(_task(tmp_path, 'configs = [{ SIZES = [3, 4] }]\nholdout = [{ SIZES = [5, 6] }]\n', source))
    cache = {config: config.label for config in task.configs}  # the session keys its case cache by config
    assert len(cache) == 2
