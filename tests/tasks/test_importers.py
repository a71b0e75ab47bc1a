"""`kernellab tasks import` on small checkouts written here in each suite's format (never copied from
the suites): what is imported, what is skipped and why, and that imported tasks load and run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage
from kernellab.tasks.importers import import_suite
from kernellab.tasks.importers.common import derived_sizes, next_prime
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import load_problem
from kernellab.tasks.model import Comparator, Policy, Visibility

SEP = "#" * 60


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip())


# ---- KernelBench-X ---------------------------------------------------------------------------------

def kbx_checkout(root: Path) -> Path:
    write(root / "utils" / "draw_helpers.py", """
        import torch
        def normal(shape, device="cuda"):
            return torch.randn(*shape, device=device)
    """)
    write(root / "data" / "kernelbenchx" / "Math" / "weighted_sum.py", f"""
        import torch

        def weighted_sum(parts, scale, *, dtype=torch.float32, layout=torch.strided):
            total = torch.zeros_like(parts[0], dtype=dtype, layout=layout)
            for p in parts:
                total = total + p * scale
            return total

        {SEP}

        import sys, os
        sys.path.append(os.path.abspath(os.path.join(os.path.dirname(__file__), "../../../utils")))
        from draw_helpers import normal

        def test_weighted_sum():
            results = {{}}
            results["tiny"] = weighted_sum([torch.tensor([1.0, -2.0], device="cuda")] * 2, 0.5)
            for _ in range(2):
                a, b, c = normal((64, 48)), normal((64, 48)), normal((64, 48))
                results["big"] = weighted_sum([a, b, c], 2.0, dtype=torch.float32, layout=torch.strided)
            return results

        test_results = test_weighted_sum()
    """)
    write(root / "data" / "kernelbenchx" / "LinearAlgebra" / "spd_solve.py", f"""
        import torch

        def spd_solve(a, b):
            return torch.cholesky_solve(b, torch.linalg.cholesky(a))

        {SEP}

        def test():
            m = torch.randn(40, 40, device="cuda")
            a = m @ m.T / 40 + torch.eye(40, device="cuda")
            spd_solve(a, torch.rand(40, 30, device="cuda") + 0.5)

        test()
    """)
    write(root / "data" / "kernelbenchx" / "Math" / "scale_inplace.py", f"""
        import torch

        def scale_inplace(x, s):
            x.mul_(s)
            return x.norm().item()

        {SEP}

        scale_inplace(torch.randn(32, 64, device="cuda"), 3.0)
    """)
    write(root / "data" / "kernelbenchx" / "LinearAlgebra" / "plain_solve.py", f"""
        import torch

        def plain_solve(a, b):
            return torch.linalg.solve(a, b)

        {SEP}

        plain_solve(torch.randn(48, 48, device="cuda") + 8 * torch.eye(48, device="cuda"),
                    torch.randn(48, 4, device="cuda"))
    """)
    write(root / "data" / "kernelbenchx" / "Random" / "noisy.py", f"""
        import torch

        def noisy(x):
            return torch.nn.functional.dropout(x, 0.5, training=True)

        {SEP}

        noisy(torch.randn(64, 64, device="cuda"))
    """)
    write(root / "data" / "kernelbenchx" / "Math" / "broken.py", f"""
        import torch

        def broken(x):
            return x

        {SEP}

        def test_broken():
            raise RuntimeError("this harness needs a GPU library")
            return broken(torch.ones(3))

        test_broken()
    """)
    write(root / "data" / "kernelbenchx_v1.json", json.dumps([
        {"file": "Math/weighted_sum.py", "name": "weighted_sum"},
        {"file": "LinearAlgebra/spd_solve.py", "precision_thresholds": {"cosine_sim": 0.99, "l1_relative": 0.01,
                                                                        "rmse": 0.01}}]))
    write(root / "examples" / "sources" / "weighted_sum.py", """
        import torch

        def weighted_sum(parts, scale, *, dtype=torch.float32, layout=torch.strided):
            return sum(p * scale for p in parts).to(dtype)
    """)
    return root


def test_kernelbench_x_import(tmp_path):
    checkout = kbx_checkout(tmp_path / "kbx")
    summary = import_suite("kernelbench-x", checkout, tmp_path / "out")
    imported = {i.source: i for i in summary.imported}
    skipped = {s.source: s.reason for s in summary.skipped}
    assert set(imported) == {"Math/weighted_sum.py", "LinearAlgebra/spd_solve.py", "Math/scale_inplace.py",
                             "LinearAlgebra/plain_solve.py"}
    assert skipped["Random/noisy.py"].startswith("random op")
    assert skipped["Math/broken.py"].startswith("the test harness fails on the CPU: RuntimeError")

    ws = load_task(tmp_path / "out" / "Math" / "weighted_sum")
    # a list of three tensors became three forward arguments; dtype and layout are init arguments
    assert ws.configs_of(Visibility.SEEN) and ws.configs_of(Visibility.EDGE)
    assert ws.outputs[0].compare is Comparator.FIXED and ws.outputs[0].fixed.for_dtype("float32")["atol"] == 1e-5
    problem = load_problem(ws, ws.configs_of(Visibility.SEEN)[0])
    assert problem.input_names == ["parts_0", "parts_1", "parts_2"]
    assert problem.init_inputs() == [{"parts": {"__tensors__": 3}, "scale": 2.0, "dtype": torch.float32,
                                      "layout": torch.strided}]
    inputs = problem.inputs(0, "cpu", "float32")
    assert [tuple(x.shape) for x in inputs] == [(64, 48)] * 3
    assert not torch.equal(inputs[0], problem.inputs(1, "cpu", "float32")[0])  # drawn again per seed
    holdouts = ws.configs_of(Visibility.HOLDOUT)
    assert len(holdouts) == 4 and ws.configs_of(Visibility.SMALL)
    assert imported["Math/weighted_sum.py"].baseline and ws.baseline_source is not None
    assert "sha256 of `data/kernelbenchx/Math/weighted_sum.py`" in (ws.root / "PROVENANCE.md").read_text()

    spd = load_task(tmp_path / "out" / "LinearAlgebra" / "spd_solve")
    # every call passes the same tensors and nothing else: a forward the reference reader follows into
    # the suite's function (weighted_sum's varying arguments keep the by-name dispatcher)
    from kernellab.kernels.reference_model import read_model

    spd_model = read_model(spd.source)
    assert spd_model.why_not is None or "_call" not in spd_model.why_not, spd_model.why_not
    assert "return spd_solve(a, b)" in spd.source
    assert "return _call(weighted_sum," in ws.source
    assert dict(spd.input_domain) == {"a": spd.domain_of("a"), "b": spd.domain_of("b")}
    assert spd.domain_of("a").value == "positive_definite" and spd.domain_of("b").value == "positive"
    assert spd.outputs[0].fixed.for_dtype("float32") == {"cosine": 0.99, "l1": 0.01, "rmse": 0.01}

    inplace = load_task(tmp_path / "out" / "Math" / "scale_inplace")
    assert inplace.mutates == ("x",)


def test_kernelbench_x_reference_as_candidate_passes_with_its_scalar_output_and_in_place_write(tmp_path):
    checkout = kbx_checkout(tmp_path / "kbx")
    import_suite("kernelbench-x", checkout, tmp_path / "out", only="scale_inplace")
    task = load_task(tmp_path / "out" / "Math" / "scale_inplace")
    options = EvalOptions(policy=Policy.OFF, stages=frozenset(Stage) - {Stage.TIMING}, device="cpu",
                          work_dir=tmp_path / "work")
    with EvalSession(task, options) as session:
        verdict = session.evaluate(task.root / "reference.py")
    assert verdict.status.value == "passed", verdict.error
    wrong = (task.root / "reference.py").read_text().replace("x.mul_(s)", "x.mul_(s * 1.001)")
    (tmp_path / "wrong.py").write_text(wrong)
    with EvalSession(task, options) as session:
        verdict = session.evaluate(tmp_path / "wrong.py")
    assert verdict.status.value == "failed"


def test_stability_inputs_the_reference_refuses_are_skipped_not_a_harness_error(tmp_path):
    checkout = kbx_checkout(tmp_path / "kbx")
    import_suite("kernelbench-x", checkout, tmp_path / "out", only="plain_solve")
    task = load_task(tmp_path / "out" / "LinearAlgebra" / "plain_solve")
    options = EvalOptions(policy=Policy.OFF, stages=frozenset({Stage.LOAD, Stage.SMOKE, Stage.STABILITY}),
                          device="cpu", work_dir=tmp_path / "work")
    with EvalSession(task, options) as session:
        verdict = session.evaluate(task.root / "reference.py")
    assert verdict.status.value == "passed", verdict.error
    stability = next(s for s in verdict.stages if s.name is Stage.STABILITY)
    assert "outside its domain" in stability.skipped and "constant_rows" in stability.skipped


def test_derived_holdout_rule():
    assert next_prime(128) == 131 and next_prime(7) == 7
    kinds = dict(derived_sizes([256, 4, 128]))
    assert kinds["scale-up"] == {256: 512, 128: 256}  # sizes below 8 never change
    assert kinds["scale-down"] == {256: 64, 128: 32}
    assert kinds["primes"] == {256: 257, 128: 131}
    assert kinds["asymmetric"] == {256: 1024, 128: 32}


# ---- robust-kbench ---------------------------------------------------------------------------------

def test_robust_kbench_import(tmp_path):
    task = tmp_path / "rkb" / "tasks" / "scaled_norm"
    write(task / "func_forward.py", """
        import torch
        import torch.nn as nn

        def forward_fn(x, gain, shift):
            return torch.nn.functional.normalize(x, dim=-1) * gain + shift

        class Model(nn.Module):
            def __init__(self, width: int, init_method: str = "standard"):
                super().__init__()
                if init_method == "standard":
                    self.gain, self.shift = nn.Parameter(torch.ones(width)), nn.Parameter(torch.zeros(width))
                else:
                    self.gain, self.shift = nn.Parameter(torch.randn(width)), nn.Parameter(torch.randn(width))

            def forward(self, x, fn=forward_fn):
                return fn(x, self.gain, self.shift)

        def get_inputs(rows: int = 8, width: int = 64):
            return [torch.randn(rows, width)]

        input_names = ["x"]
    """)
    write(task / "config_forward.json", json.dumps({
        "single_input_configs": [{"rows": 32}], "single_init_configs": [{"init_method": "standard"}],
        "single_shared_configs": [{"width": 128}],
        "multi_input_configs": [{"rows": 32}, {"rows": 64}], "multi_init_configs": [{"init_method": "standard"}],
        "multi_shared_configs": [{"width": 128}]}))
    write(task / "func_backward.py", "# backward variant\n")
    write(tmp_path / "rkb" / "tasks" / "no_config" / "func_forward.py", "import torch\n")
    summary = import_suite("robust-kbench", tmp_path / "rkb", tmp_path / "out")
    assert [i.source for i in summary.imported] == ["scaled_norm"]
    assert summary.skipped[0].source == "no_config" and summary.skipped[0].reason == "no config_forward.json"
    loaded = load_task(tmp_path / "out" / "scaled_norm")
    from kernellab.kernels.reference_model import read_model

    read = read_model(loaded.source)  # fn=forward_fn: the function, not an input
    assert read.forward_args == ["x"] and read.why_not is None, read.why_not
    assert read.outputs[0].op == "add"
    assert [c.as_dict() for c in loaded.configs_of(Visibility.SEEN)] == [{"init_method": "standard", "width": 128, "rows": 32}]
    assert [c.as_dict()["rows"] for c in loaded.configs_of(Visibility.HOLDOUT)] == [64]
    assert loaded.keep_init == ("gain", "shift")
    assert loaded.outputs[0].fixed.for_dtype("float32") == {"atol": 1e-5, "rtol": 1e-5}
    from kernellab.evaluate.reference import build_case

    problem = load_problem(loaded, loaded.configs_of(Visibility.SMALL)[0])
    case = build_case(problem, "float32", 0, "cpu")
    assert torch.equal(case.state["gain"], torch.ones(16))  # the suite's ones, not randomised


# ---- GPU MODE --------------------------------------------------------------------------------------

def test_gpumode_import(tmp_path):
    problems = tmp_path / "gm" / "problems" / "set"
    write(problems / "utils.py", """
        import torch
        def make_match_reference(reference, **kwargs):
            return lambda data, output: ""
    """)
    write(problems / "scale_py" / "task.py", """
        from typing import TypeVar
        import torch
        input_t = TypeVar("input_t", bound=tuple)
        output_t = TypeVar("output_t", bound=torch.Tensor)
    """)
    write(problems / "scale_py" / "reference.py", """
        import torch
        from task import input_t, output_t
        from utils import make_match_reference

        def ref_kernel(data: input_t) -> output_t:
            x, out = data
            out.copy_(x * 2)
            return out

        def generate_input(size: int, seed: int) -> input_t:
            gen = torch.Generator(device="cuda")
            gen.manual_seed(seed)
            x = torch.randn(size, device="cuda", dtype=torch.float16, generator=gen)
            return x, torch.empty_like(x)

        check_implementation = make_match_reference(ref_kernel, rtol=1e-3, atol=1e-3)
    """)
    write(problems / "scale_py" / "task.yml", """
        files:
          - {"name": "task.py", "source": "task.py"}
          - {"name": "utils.py", "source": "../utils.py"}
          - {"name": "reference.py", "source": "reference.py"}
        lang: "py"
        description: Scale by two.
        tests:
          - {"size": 100, "seed": 1}
          - {"size": 257, "seed": 2}
        benchmarks:
          - {"size": 4096, "seed": 3}
    """)
    write(problems / "scale_py" / "submission.py", """
        from task import input_t, output_t
        def custom_kernel(data: input_t) -> output_t:
            x, out = data
            out.copy_(x + x)
            return out
    """)
    write(problems / "own_py" / "reference.py", "def check_implementation(data, output):\n    return ''\n")
    write(problems / "own_py" / "task.yml", 'lang: "py"\ntests:\n  - {"n": 1, "seed": 1}\n')
    summary = import_suite("gpumode", tmp_path / "gm", tmp_path / "out")
    assert [i.source for i in summary.imported] == ["set/scale_py"]
    assert summary.skipped[0].reason == "its own checker (a check_implementation function)"
    task = load_task(tmp_path / "out" / "set__scale_py")
    assert [c.as_dict() for c in task.configs_of(Visibility.SEEN)] == [{"size": 4096}]
    assert [c.as_dict() for c in task.configs_of(Visibility.EDGE)] == [{"size": 100}, {"size": 257}]
    assert {c.as_dict()["size"] for c in task.configs_of(Visibility.HOLDOUT)} == {8192, 1024, 4099, 16384}
    assert task.mutates == ("data_1",) and task.outputs[0].fixed.for_dtype("float16") == {"rtol": 1e-3, "atol": 1e-3}
    problem = load_problem(task, task.configs_of(Visibility.EDGE)[0])
    x0, _ = problem.inputs(0, "cpu", "float32")
    assert x0.dtype == torch.float16 and not torch.equal(x0, problem.inputs(1, "cpu", "float32")[0])


# ---- AgentKernelArena ------------------------------------------------------------------------------

RUNNER = '''
import os
import importlib.util

TASK_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE_FILE = os.path.join(TASK_DIR, "source", "scale_rows.py")

# (rows, cols)
TEST_SHAPES = [
    (16, 32),
    (64, 128),
]


def load_module():
    spec = importlib.util.spec_from_file_location("k", SOURCE_FILE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def reference_scale_rows(x, w):
    return x * w[:, None]


def run_correctness():
    import torch
    mod = load_module()
    device = "cuda"
    for i, (rows, cols) in enumerate(TEST_SHAPES):
        try:
            torch.manual_seed(42 + i)
            x = torch.randn(rows, cols, device=device, dtype=torch.float32)
            w = torch.rand(rows, device=device)
            out = mod.scale_rows(x, w)
            torch.cuda.synchronize()
            ref = reference_scale_rows(x, w)
            if not torch.allclose(out, ref, atol=1e-4, rtol=1e-3):
                return False, "mismatch"
        except Exception as e:
            return False, str(e)
    return True, None
'''


def test_agentkernelarena_import(tmp_path):
    t2t = tmp_path / "aka" / "tasks" / "triton2triton" / "demo" / "scale_rows"
    write(t2t / "config.yaml", "source_file_path:\n  - source/scale_rows.py\ntask_type: triton2triton\n"
                               "prompt:\n  instructions: Scale rows.\n")
    write(t2t / "scripts" / "task_runner.py", RUNNER)
    write(t2t / "source" / "scale_rows.py", "import torch\n\ndef scale_rows(x, w):\n    return x * w.unsqueeze(1)\n")
    derived = tmp_path / "aka" / "tasks" / "triton2triton" / "demo" / "derived_check"
    write(derived / "config.yaml", "source_file_path:\n  - source/k.py\ntask_type: triton2triton\n")
    write(derived / "scripts" / "task_runner.py", RUNNER.replace("torch.allclose(out, ref", "torch.allclose(out[0], ref"))
    early = tmp_path / "aka" / "tasks" / "triton2triton" / "demo" / "early_ref"
    write(early / "config.yaml", "source_file_path:\n  - source/scale_rows.py\ntask_type: triton2triton\n")
    write(early / "source" / "scale_rows.py", "import torch\n\ndef scale_rows(x, w):\n    return x * w.unsqueeze(1)\n")
    write(early / "scripts" / "task_runner.py", RUNNER.replace(
        "            out = mod.scale_rows(x, w)\n",
        "            ref = reference_scale_rows(x, w)\n            out = mod.scale_rows(x.clone(), w)\n").replace(
        "            ref = reference_scale_rows(x, w)\n            if", "            if"))
    t2h = tmp_path / "aka" / "tasks" / "torch2hip" / "demo" / "Relu"
    write(t2h / "config.yaml", "source_file_path:\n  - torch/relu.py\ntask_type: torch2hip\n")
    write(t2h / "torch" / "relu.py", """
        import torch
        class Relu(torch.nn.Module):
            def __init__(self, inplace=False):
                super().__init__()
            def forward(self, x):
                return torch.relu(x)
        def get_inputs():
            for n in (64, 256):
                yield [torch.randn(n, 32)]
        def get_init_inputs():
            return [[], {"inplace": False}]
    """)
    write(tmp_path / "aka" / "tasks" / "hip2hip" / "demo" / "k" / "config.yaml", "task_type: hip2hip\n")
    summary = import_suite("agentkernelarena", tmp_path / "aka", tmp_path / "out")
    assert sorted(i.source for i in summary.imported) == ["torch2hip/demo/Relu", "triton2triton/demo/early_ref",
                                                          "triton2triton/demo/scale_rows"]
    # a reference computed before the kernel call is the reference's work, never a candidate's input
    early_task = load_task(tmp_path / "out" / "triton2triton__demo__early_ref")
    early_problem = load_problem(early_task, early_task.configs_of(Visibility.SEEN)[0])
    assert early_problem.input_names == ["arg0", "w", "x"]
    got = early_problem.module.Model(*early_problem.init_inputs())(*[v.double() for v in early_problem.inputs(0, "cpu", "float32")])[0]
    assert got.shape == (16, 32)
    reasons = {s.source: s.reason for s in summary.skipped}
    assert reasons["triton2triton/demo/derived_check"] == \
        "correctness check compares a derived expression of the kernel's output"
    assert reasons["hip2hip/demo/k"].startswith("task type hip2hip: not imported")

    task = load_task(tmp_path / "out" / "triton2triton__demo__scale_rows")
    assert [c.as_dict() for c in task.configs_of(Visibility.SEEN)] == [{"CASE": 0}, {"CASE": 1}]
    assert len(task.configs_of(Visibility.HOLDOUT)) == 3  # scale-down (16, 32) is a shipped shape: left out
    assert task.outputs[0].fixed.for_dtype("float32") == {"atol": 1e-4, "rtol": 1e-3}
    assert task.baseline_source is not None and "class ModelNew" in task.baseline_source
    problem = load_problem(task, task.configs_of(Visibility.SEEN)[1])
    x, w = problem.inputs(0, "cpu", "float32")
    assert x.shape == (64, 128) and w.shape == (64,)
    expected = x.double() * w.double()[:, None]
    assert torch.allclose(problem.module.Model(*problem.init_inputs())(x.double(), w.double())[0], expected)

    relu = load_task(tmp_path / "out" / "torch2hip__demo__Relu")
    assert len(relu.configs_of(Visibility.SEEN)) == 2
    relu_problem = load_problem(relu, relu.configs_of(Visibility.SEEN)[1])
    assert relu_problem.inputs(0, "cpu", "float32")[0].shape == (256, 32)


def test_cli_import_prints_a_summary_and_json(tmp_path):
    checkout = kbx_checkout(tmp_path / "kbx")
    done = subprocess.run([sys.executable, "-m", "kernellab.cli.main", "tasks", "import", "kernelbench-x",
                           str(checkout), "--out", str(tmp_path / "out"), "--only", "Random", "--json"],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["imported_count"] == 0 and summary["skip_reasons"] == {"random op": 1}
    bad = subprocess.run([sys.executable, "-m", "kernellab.cli.main", "tasks", "import", "nosuch", str(checkout),
                          "--out", str(tmp_path / "o")], capture_output=True, text=True, timeout=120, check=False)
    assert bad.returncode == 2 and "unknown suite 'nosuch'" in bad.stderr and "Traceback" not in bad.stderr


def test_a_folder_that_is_not_the_suite_is_refused_naming_what_was_looked_for(tmp_path):
    (tmp_path / "other" / "tasks" / "x").mkdir(parents=True)
    for suite, marker in (("gpumode", "task.yml"), ("robust-kbench", "func_forward.py"),
                          ("agentkernelarena", "config.yaml")):
        with pytest.raises(FileNotFoundError, match=rf"no \w+/\*\*/{marker} \(is this an? "):
            import_suite(suite, tmp_path / "other", tmp_path / "out")
