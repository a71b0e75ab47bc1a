"""What the speed work on a full evaluation may leave out, and what it must still do.

Holdout configs are timed in one dtype each by default (checked in all), and the child keeps what
it received mapped without ever sending the judge's own memory back.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from kernellab.evaluate.options import EvalOptions, resolve
from kernellab.tasks.load import load_task
from kernellab.tasks.model import TaskError

ADVERSARIAL = Path(__file__).parents[1] / "adversarial"
VECTOR_ADD = ADVERSARIAL / "tasks" / "vector_add"
GOOD_ADD = ADVERSARIAL / "candidates" / "vector_add" / "masked_add.py"


@pytest.fixture(scope="module")
def rmsnorm():
    return load_task("normalization/rmsnorm")


def test_holdouts_are_timed_in_bfloat16_where_it_is_evaluated(rmsnorm):
    resolved = resolve(rmsnorm, EvalOptions(), cuda_available=True)
    assert resolved.dtypes == ("float32", "bfloat16", "float16")
    assert resolved.holdout_timing_dtypes() == ("bfloat16",)


def test_without_bfloat16_holdouts_are_timed_in_the_first_dtype(rmsnorm):
    resolved = resolve(rmsnorm, EvalOptions(dtypes=("float16", "float32")), cuda_available=True)
    assert resolved.holdout_timing_dtypes() == ("float16",)


def test_every_dtype_or_a_chosen_few_can_still_be_timed(rmsnorm):
    everything = resolve(rmsnorm, EvalOptions(holdout_timing_dtypes="all"), cuda_available=True)
    assert everything.holdout_timing_dtypes() == ("float32", "bfloat16", "float16")
    chosen = resolve(rmsnorm, EvalOptions(holdout_timing_dtypes=("float16", "float32")), cuda_available=True)
    assert chosen.holdout_timing_dtypes() == ("float32", "float16")  # in evaluation order
    unevaluated = resolve(rmsnorm, EvalOptions(dtypes=("float32",), holdout_timing_dtypes=("float16",)),
                          cuda_available=True)
    assert unevaluated.holdout_timing_dtypes() == ()  # never checked in float16: never timed in it


def test_one_dtype_per_task_prefers_bfloat16():
    rmsnorm = load_task("normalization/rmsnorm")
    assert resolve(rmsnorm, EvalOptions(dtypes="one"), cuda_available=True).dtypes == ("bfloat16",)
    on_cpu = resolve(rmsnorm, EvalOptions(dtypes="one", device="cpu"), cuda_available=False)
    assert on_cpu.dtypes == ("float32",)  # the interpreter does not emulate bfloat16
    adamw = load_task("optimizer/adamw")
    assert resolve(adamw, EvalOptions(dtypes="one"), cuda_available=True).dtypes == adamw.dtypes[:1]
    with pytest.raises(TaskError):
        EvalOptions(dtypes="two")


@pytest.mark.parametrize("value", ["some", ("float8",)])
def test_an_unknown_holdout_timing_choice_is_refused(value):
    with pytest.raises(TaskError):
        EvalOptions(holdout_timing_dtypes=value)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_holdouts_are_checked_in_every_dtype_and_timed_in_one():
    from kernellab.evaluate.session import EvalSession

    options = EvalOptions(compile_baseline=False, timing_budget_s=0.1, timing_max_samples=40)
    with EvalSession(load_task(VECTOR_ADD), options) as session:
        verdict = session.evaluate(GOOD_ADD)
    assert verdict.status.value == "passed", verdict.error
    holdout = next(s for s in verdict.stages if s.name.value == "holdout")
    assert {c.dtype for c in holdout.configs} == {"float32", "float16", "bfloat16"}
    assert verdict.holdout.timings and {t.dtype for t in verdict.holdout.timings} == {"bfloat16"}
    assert len({t.dtype for t in verdict.timings}) == 3  # seen configs: every dtype


# ------------------------------------------------------------------------------------ cold path


def _baseline_session(tmp_path, **options):
    from types import SimpleNamespace

    task = SimpleNamespace(sha256="f" * 64, baseline_source=None)
    return SimpleNamespace(task=task, resolved=SimpleNamespace(cache_dir=tmp_path), device_label="GPU X",
                           versions={"torch": "t", "triton": "tr"}, options=EvalOptions(**options))


def _baseline_sets():
    from types import SimpleNamespace

    cases = [SimpleNamespace(eager_model=lambda *a: None, inputs=[], restore_inputs=lambda: None)]
    return SimpleNamespace(as_cases=lambda: cases)  # the timing slots, as the baselines read them


@pytest.mark.parametrize("measured, expected_compile", [
    ([100.0], 200.0),  # steady: the cached row as it is
    ([120.0, 101.0], 200.0),  # the quick re-time was the outlier: the full one agrees with the cache
    ([120.0, 120.0], 240.0),  # drifted: eager re-timed, the compile time scaled, Inductor not run
])
def test_a_cached_compile_baseline_is_never_compiled_again(tmp_path, monkeypatch, measured, expected_compile):
    from kernellab.evaluate import baselines
    from kernellab.sandbox.timing_stats import TimingPlan

    session = _baseline_session(tmp_path)
    config = load_task("normalization/rmsnorm").configs[0]
    key = baselines._cache_key(session, config, "bfloat16", False, "events")
    baselines._write_cache(baselines._cache_file(session), key,
                           {"eager_us": 100.0, "compile_us": 200.0, "baseline_us": None, "compile_note": None})
    times = iter(measured)
    monkeypatch.setattr(baselines, "_median_us", lambda *a, **k: next(times))

    def no_inductor(*a, **k):
        raise AssertionError("torch.compile ran although the cache has its time")

    monkeypatch.setattr(baselines, "_time_compiled", no_inductor)
    got = baselines.baseline_times(session, config, "bfloat16", False, _baseline_sets(), TimingPlan(), "events",
                                   with_compile=True)
    assert got.compile_us == pytest.approx(expected_compile)
    assert got.eager_us == pytest.approx(100.0 if expected_compile == 200.0 else 120.0)
    assert next(times, None) is None  # every planned measurement was made, no more


def test_without_the_compile_baseline_a_cached_compile_time_is_not_reported(tmp_path, monkeypatch):
    from kernellab.evaluate import baselines
    from kernellab.sandbox.timing_stats import TimingPlan

    session = _baseline_session(tmp_path)
    config = load_task("normalization/rmsnorm").configs[0]
    key = baselines._cache_key(session, config, "bfloat16", False, "events")
    baselines._write_cache(baselines._cache_file(session), key,
                           {"eager_us": 100.0, "compile_us": 200.0, "baseline_us": None, "compile_note": None})
    monkeypatch.setattr(baselines, "_median_us", lambda *a, **k: 100.0)
    for check_drift in (True, False):
        got = baselines.baseline_times(session, config, "bfloat16", False, _baseline_sets(), TimingPlan(), "events",
                                       with_compile=False, check_drift=check_drift)
        assert (got.eager_us, got.compile_us) == (100.0, None)


def test_a_row_the_cache_lacks_is_compiled_and_cached(tmp_path, monkeypatch):
    from kernellab.evaluate import baselines
    from kernellab.sandbox.timing_stats import TimingPlan

    session = _baseline_session(tmp_path)
    config = load_task("normalization/rmsnorm").configs[0]
    monkeypatch.setattr(baselines, "_median_us", lambda *a, **k: 50.0)
    monkeypatch.setattr(baselines, "_time_compiled", lambda *a, **k: 40.0)
    got = baselines.baseline_times(session, config, "float16", True, _baseline_sets(), TimingPlan(), "graph",
                                   with_compile=True)
    assert (got.eager_us, got.compile_us) == (50.0, 40.0)
    cached = baselines._read_cache(baselines._cache_file(session))
    assert cached[baselines._cache_key(session, config, "float16", True, "graph")]["compile_us"] == 40.0


def test_without_cached_baselines_a_cached_row_is_measured_again(tmp_path, monkeypatch):
    """A finalist's re-timing round: eager measured now, not the run's one cached measurement."""
    from kernellab.evaluate import baselines
    from kernellab.sandbox.timing_stats import TimingPlan

    config = load_task("normalization/rmsnorm").configs[0]
    monkeypatch.setattr(baselines, "_median_us", lambda *a, **k: 101.0)  # within the drift limit of 100
    for cached, expected in ((True, 100.0), (False, 101.0)):
        session = _baseline_session(tmp_path, cached_baselines=cached)
        key = baselines._cache_key(session, config, "bfloat16", False, "events")
        baselines._write_cache(baselines._cache_file(session), key,
                               {"eager_us": 100.0, "compile_us": None, "baseline_us": None, "compile_note": None})
        got = baselines.baseline_times(session, config, "bfloat16", False, _baseline_sets(), TimingPlan(), "events",
                                       with_compile=False)
        assert got.eager_us == expected


def test_precision_probes_are_made_when_a_float32_check_fails(tmp_path):
    from kernellab.evaluate.checking import _precision
    from kernellab.evaluate.session import EvalSession

    task = load_task(ADVERSARIAL / "tasks" / "rmsnorm")
    with EvalSession(task, EvalOptions(device="cpu", work_dir=tmp_path)) as session:
        from kernellab.tasks.model import Visibility

        case = session.case(task.configs_of(Visibility.SMALL)[0], "float32", 0)
        assert not case.probed and not case.lower_precision_errs  # a passing candidate never pays for them
        wrong = [r.to(torch.bfloat16).to(torch.float32) * 1.01 for r in case.ref_outputs]
        _precision(case, wrong, "x")
        assert case.probed and case.lower_precision_errs


def test_cases_used_once_per_evaluation_are_evicted_before_the_others(tmp_path):
    from kernellab.evaluate.session import EvalSession
    from kernellab.tasks.model import Visibility

    task = load_task(VECTOR_ADD)
    with EvalSession(task, EvalOptions(device="cpu", work_dir=tmp_path)) as session:
        config = task.configs_of(Visibility.SMALL)[0]
        first = session.case(config, "float32", 1)
        session.case_cache_bytes = 2 * session._case_bytes[next(iter(session._cases))]  # room for two
        session.case(config, "float32", 2)
        session.case(config, "float32", 3, once=True)  # over the budget: it goes, not the others
        assert [k[2] for k in session._cases] == [1, 2]
        session.case(config, "float32", 4)  # among the others: least recently used first
        assert [k[2] for k in session._cases] == [2, 4]
        session.case_cache_bytes *= 2
        session.case(config, "float32", 5, once=True)
        session.case(config, "float32", 2)
        session.case(config, "float32", 5, once=True)  # a hit keeps it at the evicted end
        assert [k[2] for k in session._cases] == [5, 4, 2]
        assert session.case(config, "float32", 1) is not first  # evicted earlier: built again


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_an_own_triton_kernel_stays_own_after_a_torch_compile_baseline_in_the_judge():
    """The judge compiles each own Triton kernel again and compares binaries. Inductor points
    TRITON_PTXAS_PATH at torch's ptxas at its first compile in the judge (the torch.compile baseline),
    and the same kernel assembled by another ptxas is another binary: every candidate after the first
    was refused its own kernels ("no kernel of the candidate ran"). The judge holds one ptxas."""
    from kernellab.evaluate.session import EvalSession

    options = EvalOptions(compile_baseline=True, timing_budget_s=0.1, timing_max_samples=20)
    with EvalSession(load_task(VECTOR_ADD), options) as session:
        first = session.evaluate(GOOD_ADD)
        second = session.evaluate(GOOD_ADD)
    assert first.status.value == "passed", first.error
    assert second.status.value == "passed", second.error


def test_the_judge_holds_one_ptxas_for_itself_and_its_children(monkeypatch):
    """Inductor sets TRITON_PTXAS_PATH only where it is unset: once held, its first compile leaves it,
    and the children get that same path."""
    pytest.importorskip("triton")
    from kernellab.sandbox import forkserver

    monkeypatch.setenv("TRITON_PTXAS_PATH", "")  # restored (to unset, if so) after the test
    monkeypatch.delenv("TRITON_PTXAS_PATH")
    monkeypatch.setitem(forkserver._AT_START, "TRITON_PTXAS_PATH", None)
    forkserver.hold_ptxas()
    held = os.environ.get("TRITON_PTXAS_PATH")
    if held is None:
        pytest.skip("no ptxas in this Triton")
    from torch._inductor.runtime.compile_tasks import _set_triton_ptxas_path

    _set_triton_ptxas_path()
    assert os.environ["TRITON_PTXAS_PATH"] == held == forkserver.kept_env()["TRITON_PTXAS_PATH"]
    assert Path(held).is_file()
