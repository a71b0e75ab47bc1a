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

from kernellab.optimize.amdahl import projected, whole_speedup  # noqa: E402
from kernellab.optimize.chains import find_chains  # noqa: E402
from kernellab.optimize.graph import Capture  # noqa: E402
from kernellab.optimize.model_source import ModelSourceError, load_model, parse_sizes  # noqa: E402

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


@pytest.mark.slow
def test_whole_pipeline_tiny_model(tmp_path):
    from kernellab.optimize.pipeline import OptimizeOptions, optimize

    result = optimize(OptimizeOptions(model=TINY, inputs="2x8", out=tmp_path, mode="infer", dtype="fp32",
                                      budget="1it", top=2, device="cpu"))
    _check_folder(tmp_path, "infer")
    assert {o.kind for o in result.ops if o.installed} >= {"rmsnorm"}

    # apply() on a fresh copy of the model: the kernels run, outputs match at an unseen size
    import kernellab

    bundle = load_model(TINY, "3x5")
    optimized = kernellab.apply(bundle.model, tmp_path)
    x = bundle.inputs(seed=5)[0]
    with torch.no_grad():
        torch.testing.assert_close(optimized(x), bundle.model(x), rtol=1e-4, atol=1e-4)
    assert sum(k.kernel_calls for k in optimized.kernellab_installer.kernels) > 0


@pytest.mark.slow
def test_whole_pipeline_transformers_llama_train(tmp_path):
    pytest.importorskip("transformers", reason="the optional extra kernellab[optimize] is not installed")
    from kernellab.optimize.pipeline import OptimizeOptions, optimize

    optimize(OptimizeOptions(model="llama-tiny", inputs="2x8", out=tmp_path, mode="train", dtype="fp32",
                             budget="1it", top=2, device="cpu"))
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


def test_a_kernel_that_breaks_the_model_is_uninstalled(tmp_path):
    """The end-to-end check takes out a kernel whose model outputs are wrong, and says why."""
    from kernellab.optimize.extract import extract
    from kernellab.optimize.profile import profile_model
    from kernellab.optimize.records import read_ops, write_ops
    from kernellab.optimize.verify import verify

    bundle = load_model(TINY, "2x8")
    profile = profile_model(bundle, mode="infer", dtype=torch.float32, device="cpu")
    profile.rerank(frozenset({"add_rmsnorm"}))
    ops = extract(profile.hotspots, tmp_path, top=1, mode="infer", skip_ops=("linear",))
    assert ops[0].kind == "rmsnorm" and ops[0].template == "norm"
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "wrong.py").write_text(WRONG_KERNEL)
    ops[0].kernel, ops[0].verified_dtypes = "kernels/wrong.py", ["float32"]
    write_ops(tmp_path, ops)
    result = verify(bundle, ops, tmp_path, mode="infer", dtype=torch.float32, device="cpu")
    record = read_ops(tmp_path)[0]
    assert record.uninstalled and not record.installed and "breaks the model" in record.verdict
    assert result.uninstalled == {record.slug: record.verdict}
