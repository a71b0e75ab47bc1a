"""The model optimizer on the CPU: profile -> extract -> search (Triton interpreter) -> apply -> verify.

Real parts throughout: Dynamo captures the models, torch.profiler measures them, the search agent
solves the extracted tasks through the real solve machinery and verifier, the kernels are installed
as torch custom ops by rewriting the captured graphs, and the end-to-end check compares the models.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import torch

os.environ.setdefault("TRITON_INTERPRET", "1")

from kernellab.optimize.amdahl import projected, whole_speedup
from kernellab.optimize.chains import find_chains
from kernellab.optimize.graph import Capture
from kernellab.optimize.model_source import ModelSourceError, load_model, parse_sizes

TINY = f"{Path(__file__).with_name('tiny_model.py')}:factory"


def test_amdahl():
    assert whole_speedup(0.5, 2.0) == pytest.approx(1 / 0.75)
    assert whole_speedup(0.5, math.inf) == pytest.approx(2.0)
    assert projected([(0.25, 2.0), (0.25, math.inf)]) == pytest.approx(1 / 0.625)


def test_sizes_and_bad_model():
    assert parse_sizes("4x2048") == {"B": 4, "S": 2048}
    assert parse_sizes("B=8") == {"B": 8}
    with pytest.raises(ModelSourceError):
        parse_sizes("4xq")
    with pytest.raises(ModelSourceError):
        load_model("no/such/file.py:factory", "2x8")


def test_chains_found_from_the_graph():
    """RMSNorm (casts and all), residual add + RMSNorm and SiLU*mul are found by dataflow."""
    bundle = load_model(TINY, "2x8")
    capture = Capture()
    torch.compile(lambda x: bundle.model(x), backend=capture)(*bundle.inputs())
    kinds = [c.kind for g in capture.graphs for c in find_chains(g.module) if c.kind != "op"]
    assert kinds.count("act_mul") == 2
    assert kinds.count("add_rmsnorm") >= 2 and "rmsnorm" in kinds
    skipped = [c.kind for g in capture.graphs for c in find_chains(g.module, frozenset({"add_rmsnorm"}))]
    assert "add_rmsnorm" not in skipped and skipped.count("rmsnorm") == 7  # norm1, norm2 twice, per block; the last norm


def _check_folder(out: Path, mode: str) -> dict:
    profile = json.loads((out / "profile.json").read_text())
    ops = json.loads((out / "ops.json").read_text())
    verify = json.loads((out / "verify.json").read_text())
    assert profile["coverage"] > 0.5 and profile["hotspots"]
    for h in profile["hotspots"]:
        assert h["projected_whole_speedup"]["inf"] >= h["projected_whole_speedup"]["2"] >= 1.0
    installed = [o for o in ops if o["installed"]]
    assert installed, ops
    for o in installed:
        task = (out / o["task"] / "task.toml").read_text()
        assert "holdout" in task and ("backward = true" in task) == (mode == "train")
        assert (out / o["kernel"]).is_file()
        used = verify["rewrites"][o["slug"]]
        assert used["chains_replaced"] >= 1 and used["kernel_calls"] >= 1, used
    assert verify["passed"] and len(verify["checks"]) == 3 and not all(c["seen"] for c in verify["checks"])
    assert (out / "report.md").is_file() and "<svg" in (out / "report.html").read_text()
    return verify


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One whole optimize run on the hand-written model (infer, fp32, CPU), shared by the tests below."""
    from kernellab.optimize.pipeline import OptimizeOptions, optimize

    out = tmp_path_factory.mktemp("tiny")
    result = optimize(OptimizeOptions(model=TINY, inputs="2x8", out=out, mode="infer", dtype="fp32",
                                      budget="1it", top=3, device="cpu"))
    return out, result


@pytest.mark.slow
def test_whole_pipeline_tiny_model(tiny_run):
    out, result = tiny_run
    _check_folder(out, "infer")
    assert {o.kind for o in result.ops if o.installed} == {"add_rmsnorm", "rmsnorm", "act_mul"}

    # apply() on a fresh copy of the model: the kernels run, outputs match at an unseen size
    import kernellab

    bundle = load_model(TINY, "3x5")
    torch._dynamo.reset()
    optimized = kernellab.apply(bundle.model, out)
    x = bundle.inputs(seed=5)[0]
    with torch.no_grad():
        torch.testing.assert_close(optimized(x), bundle.model(x), rtol=1e-4, atol=1e-4)
    assert sum(k.kernel_calls for k in optimized.kernellab_installer.kernels) > 0


@pytest.mark.slow
def test_whole_pipeline_transformers_llama_train(tmp_path):
    pytest.importorskip("transformers", reason="the optional extra kernellab[optimize] is not installed")
    from kernellab.optimize.pipeline import OptimizeOptions, optimize

    # top 3 of {cross-entropy, RoPE, RMSNorm, SiLU*mul} always holds one a search template implements
    optimize(OptimizeOptions(model="llama-tiny", inputs="2x8", out=tmp_path, mode="train", dtype="fp32",
                             budget="1it", top=3, device="cpu"))
    verify = _check_folder(tmp_path, "train")
    assert any(c["where"].startswith(("grad", "loss")) for c in verify["checks"])


WRONG_KERNEL = '''
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Forgets the normalisation: a kernel that passes nothing but is installed here on purpose."""

    def __init__(self, hidden, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))

    def forward(self, x):
        return x * self.weight
'''


@pytest.mark.slow
def test_a_kernel_that_breaks_the_model_is_uninstalled(tiny_run, tmp_path):
    """The end-to-end check takes out a kernel whose model outputs are wrong, and says why."""
    import shutil

    from kernellab.optimize.records import read_ops, write_ops
    from kernellab.optimize.verify import verify

    out = tmp_path / "run"
    shutil.copytree(tiny_run[0], out)
    ops = read_ops(out)
    norm = next(o for o in ops if o.kind == "rmsnorm")
    (out / norm.kernel).write_text(WRONG_KERNEL)
    for o in ops:
        o.installed, o.uninstalled, o.verdict = False, False, ""
    write_ops(out, ops)
    bundle = load_model(TINY, "2x8")
    result = verify(bundle, ops, out, mode="infer", dtype=torch.float32, device="cpu")
    by_slug = {o.slug: o for o in read_ops(out)}
    assert by_slug[norm.slug].uninstalled and "breaks the model" in by_slug[norm.slug].verdict
    assert result.uninstalled == {norm.slug: by_slug[norm.slug].verdict}
    assert result.passed and all(o.installed for o in by_slug.values() if o.slug != norm.slug)


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_installed_ops_trace_under_compile_with_gradients(tiny_run, backend):
    """The installed custom ops go through AOTAutograd (fake implementations, autograd formulas)
    and Inductor in one graph, and give the original model's gradients."""
    import copy

    import kernellab

    bundle = load_model(TINY, "2x6")
    reference = copy.deepcopy(bundle.model)
    torch._dynamo.reset()
    optimized = kernellab.apply(bundle.model, tiny_run[0], compile=backend)
    x = bundle.inputs(seed=3)[0]
    optimized(x).float().square().mean().backward()
    reference(x).float().square().mean().backward()
    installer = optimized.kernellab_installer
    assert len(installer.graphs) == 1  # no graph break
    assert sum(k.rewrites for k in installer.kernels) >= 2 and sum(k.kernel_calls for k in installer.kernels) >= 2
    for (name, p), q in zip(bundle.model.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-5, msg=name)
