"""Compiling ahead: what the helpers are asked to call, that a real child does it on inputs of its
own and survives what fails, and (on a GPU) that an evaluation with helpers passes and ends them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from kernellab.evaluate.compile_ahead import MAX_HELPERS, WARM_SEED, helper_count, warm_items
from kernellab.evaluate.options import EvalOptions, resolve, with_stages
from kernellab.evaluate.verdict import Stage
from kernellab.sandbox.candidate import CandidateProcess, ChildSpec
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import reference_file
from kernellab.tasks.model import Visibility

ROOT = Path(__file__).parents[2]
RMSNORM_TRITON = ROOT / "examples" / "rmsnorm_triton.py"


@pytest.fixture(scope="module")
def rmsnorm():
    return load_task("normalization/rmsnorm")


def _labels(task, *visibilities):
    return [c.label for v in visibilities for c in task.configs_of(v)]


def test_helpers_are_asked_for_every_shape_the_evaluation_reaches_in_its_order(rmsnorm):
    resolved = resolve(rmsnorm, EvalOptions(), cuda_available=True)
    dtypes = resolved.dtypes
    first = rmsnorm.configs_of(Visibility.SEEN)[0]
    items = warm_items(rmsnorm, resolved, (first, "float32"))
    got = [(i["label"], i["dtype"], i["grad_inputs"]) for i in items]
    seen, edge, holdout = (_labels(rmsnorm, v) for v in (Visibility.SEEN, Visibility.EDGE, Visibility.HOLDOUT))
    expected = ([(label, d, None) for label in seen + edge for d in dtypes]
                + [(label, d, ["x"]) for label in seen for d in dtypes]
                + [(label, d, None) for label in holdout for d in dtypes])
    expected.remove((first.label, "float32", None))  # the load stage calls it
    assert got == expected


def test_holdouts_are_never_warmed_when_the_evaluation_does_not_run_them(rmsnorm):
    small = rmsnorm.configs_of(Visibility.SMALL)[0]
    for options in (EvalOptions(configs="seen"), with_stages(EvalOptions(), Stage.LOAD, Stage.SHAPE_SWEEP, Stage.EDGE)):
        items = warm_items(rmsnorm, resolve(rmsnorm, options, cuda_available=True), (small, "float32"))
        holdouts = set(_labels(rmsnorm, Visibility.HOLDOUT))
        assert items and not holdouts & {i["label"] for i in items}


def test_no_helpers_when_no_check_runs_between_the_load_and_the_timing(rmsnorm):
    """A re-timing (smoke and timing only) has nothing for compiles to overlap with: helpers would
    still be starting their CUDA contexts when the timing pauses them."""
    from types import SimpleNamespace

    def count(options):
        resolved = resolve(rmsnorm, options, cuda_available=True)
        session = SimpleNamespace(device="cuda", options=options, resolved=resolved)
        return helper_count(session, SimpleNamespace(language="triton"))

    full = count(EvalOptions())
    assert full == min(MAX_HELPERS, (os.cpu_count() or 1) // 2)
    assert count(with_stages(EvalOptions(), Stage.SMOKE, Stage.TIMING)) == 0
    assert count(with_stages(EvalOptions(), Stage.SMOKE, Stage.EDGE, Stage.TIMING)) == full
    assert count(with_stages(EvalOptions(compile_ahead=2), Stage.SMOKE, Stage.TIMING)) == 2  # asked for


def test_a_child_warms_shapes_on_its_own_inputs_and_reports_what_failed(server, tmp_path, rmsnorm):
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "TRITON_INTERPRET": "1",
           "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    child = CandidateProcess(server, ChildSpec("cpu", True, env, tmp_path / "helper.log"))
    try:
        child.request("import", 60, path=str(RMSNORM_TRITON))
        small = rmsnorm.configs_of(Visibility.SMALL)[0]
        items = [
            {"label": small.label, "values": small.as_dict(), "dtype": "float32", "keep_dtype": [],
             "grad_inputs": None},
            {"label": small.label, "values": small.as_dict(), "dtype": "float16", "keep_dtype": [],
             "grad_inputs": ["x"]},
            # A shape get_inputs cannot make: that item fails, the others are still done.
            {"label": "num_tokens=-1", "values": dict(small.as_dict(), num_tokens=-1), "dtype": "float32",
             "keep_dtype": [], "grad_inputs": None},
        ]
        started = child.submit("warm", source=rmsnorm.source, where=str(reference_file(rmsnorm)),
                               seed=WARM_SEED, items=items)
        answer = child.collect("warm", started, 120)
        assert answer["warmed"] == 2
        assert len(answer["failed"]) == 1 and answer["failed"][0].startswith("num_tokens=-1 float32:")
        assert child.answered() is False  # nothing more to collect
        child.request("release", 10)  # and it still answers
    finally:
        child.close()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_an_evaluation_with_helpers_passes_and_ends_them(rmsnorm):
    from kernellab.evaluate.session import EvalSession

    options = EvalOptions(compile_baseline=False, timing_budget_s=0.1, timing_max_samples=40, compile_ahead=2)
    with EvalSession(rmsnorm, options) as session:
        verdict = session.evaluate(RMSNORM_TRITON)
        logs = sorted(session.work_dir.glob("candidate-*/compile-ahead-*.log"))
    assert verdict.status.value == "passed", verdict.error
    note = next(n for n in verdict.notes if n.startswith("compile ahead:"))
    assert "2 helper process(es)" in note, note
    assert len(logs) == 2
