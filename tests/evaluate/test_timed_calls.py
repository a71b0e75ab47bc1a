"""Every call the candidate sees is a checked call, and a call ends when its outputs are plain tensors.

The judge's side (``timing_slots``) is exercised on real reference cases: fresh values every round,
every call's outputs, updated inputs and gradients judged against the float64 reference of what it
received, the judge's memory compared after the call. The whole protocol (rounds in a real child,
``sandbox.round_clock``) runs on the CPU as the timing stage's dry run, so a candidate that goes
wrong once the checks are over is rejected here too; on a GPU the same rounds are timed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.timing_slots import TimingSlots
from kernellab.sandbox.plain import OutputContractError, plain_gradients, plain_outputs
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Visibility

ADVERSARIAL = Path(__file__).parents[1] / "adversarial"
RMSNORM = ADVERSARIAL / "tasks" / "rmsnorm"
SGD = ADVERSARIAL / "tasks" / "sgd_momentum"
HONEST_RMSNORM = ADVERSARIAL / "candidates" / "rmsnorm" / "single_block.py"
OPTIONS = dict(request_timeout_s=60, timing_budget_s=0.2, time_holdout=False, compile_baseline=False)


# ------------------------------------------------------------------------------------ plain outputs


def test_plain_outputs_take_exact_tensors_in_exact_containers():
    a, b = torch.ones(2), torch.zeros(3)
    assert plain_outputs(a) == [a]
    flat = plain_outputs((a, [None, b]))
    assert len(flat) == 2 and flat[0] is a and flat[1] is b
    assert plain_gradients((None, a)) == [None, a]


class _Walked(list):
    walked = False

    def __iter__(self):  # the deferred work a harness walking its outputs would launch
        type(self).walked = True
        return super().__iter__()


class _Sub(torch.Tensor):
    pass


@pytest.mark.parametrize("make", [
    lambda: _Walked([torch.ones(2)]),
    lambda: torch.ones(2).as_subclass(_Sub),
    lambda: torch.nn.Parameter(torch.ones(2)),
    lambda: {"y": torch.ones(2)},
    lambda: (torch.ones(2), 3.0),
], ids=["list-subclass", "tensor-subclass", "parameter", "dict", "float"])
def test_anything_else_breaks_the_contract_without_running_candidate_code(make):
    _Walked.walked = False
    with pytest.raises(OutputContractError):
        plain_outputs(make())
    assert not _Walked.walked


# ------------------------------------------------------------------------------------ the judge's side


def _case(task_path: Path, session: EvalSession, backward: bool = False):
    config = session.task.configs_of(Visibility.SMALL)[0]
    return session.case(config, "float32", 0, backward=backward)


@pytest.fixture(scope="module")
def rmsnorm_session():
    # Seen configs only: no holdout calls after the timing stage, so the checks' calls are all the
    # `run` requests before it.
    with EvalSession(load_task(RMSNORM), EvalOptions(**OPTIONS, configs="seen")) as session:
        yield session


def _eager_results(slots: TimingSlots, mutate: bool = False) -> list[dict]:
    """What an honest candidate returns for the slots' current values (eager in the task dtype)."""
    results = []
    for slot in slots.slots:
        args = [v.clone() for v in slot.inputs]
        with torch.no_grad():
            outs = plain_outputs(slots.case.eager_model(*args))
        results.append({"outputs": outs, "mutated": [args[j] for j in slots.mutated], "grads": None})
    return results


def test_every_round_gets_fresh_values_never_the_checked_ones(rmsnorm_session):
    case = _case(RMSNORM, rmsnorm_session)
    slots = TimingSlots(case, 3, backward=False)
    seen = [case.pristine[0].clone()]
    for _ in range(3):
        slots.refresh()
        for slot in slots.slots:
            assert torch.equal(slot.inputs[0], slot.pristine[0])  # the shared memory holds this round's values
            assert not any(torch.equal(slot.inputs[0], old) for old in seen)
            seen.append(slot.inputs[0].clone())


def test_honest_calls_pass_and_a_remembered_output_fails(rmsnorm_session):
    slots = TimingSlots(_case(RMSNORM, rmsnorm_session), 3, backward=False)
    slots.refresh()
    honest = _eager_results(slots)
    assert all(o.passed for o in slots.check(honest, "M=8 float32")), [o.check.note for o in slots.check(honest, "x")]
    slots.refresh()  # new values: the outputs of the last round are now remembered outputs
    stale = slots.check(honest, "M=8 float32")
    assert not any(o.passed for o in stale)
    assert "error above tolerance" in stale[0].check.note


def test_writing_into_the_judges_memory_during_a_timed_call_is_input_mutation(rmsnorm_session):
    slots = TimingSlots(_case(RMSNORM, rmsnorm_session), 2, backward=False)
    slots.refresh()
    honest = _eager_results(slots)
    slots.slots[1].inputs[0].add_(1.0)  # what a candidate writing into x would leave behind
    outcomes = slots.check(honest, "M=8 float32")
    assert outcomes[0].passed
    assert [v.kind.value for v in outcomes[1].violations] == ["input_mutation"]


def test_the_updated_inputs_of_a_mutates_task_are_judged_on_every_call():
    with EvalSession(load_task(SGD), EvalOptions(**OPTIONS)) as session:
        slots = TimingSlots(_case(SGD, session), 2, backward=False)
        slots.refresh()
        honest = _eager_results(slots)
        assert all(o.passed for o in slots.check(honest, "P=1000 float32"))
        skipped = [dict(r, mutated=[slot.pristine[j].clone() for j in slots.mutated])  # "did nothing"
                   for r, slot in zip(honest, slots.slots)]
        assert not any(o.passed for o in slots.check(skipped, "P=1000 float32"))


def test_gradients_of_timed_forward_backward_calls_are_judged():
    with EvalSession(load_task("normalization/rmsnorm"), EvalOptions(**OPTIONS)) as session:
        case = _case(Path("normalization/rmsnorm"), session, backward=True)
        slots = TimingSlots(case, 2, backward=True)
        slots.refresh()
        results = []
        for slot in slots.slots:
            x = slot.inputs[0].clone().requires_grad_(True)
            out = case.eager_model(x)
            params = [p for p in case.eager_model.parameters() if p.requires_grad]
            grads = torch.autograd.grad([out], [x] + params, slot.grad_outputs)
            names = [n for n, p in case.eager_model.named_parameters() if p.requires_grad]
            results.append({"outputs": [out.detach()], "mutated": [],
                            "grads": {"inputs": [grads[0]], "params": dict(zip(names, grads[1:]))}})
        assert all(o.passed for o in slots.check(results, "fwd+bwd")), [o.check.note for o in slots.check(results, "x")]
        results[1]["grads"]["inputs"][0] = torch.zeros_like(results[1]["grads"]["inputs"][0])
        outcomes = slots.check(results, "fwd+bwd")
        assert outcomes[0].passed and not outcomes[1].passed
        assert "gradient input:x" in outcomes[1].check.note
        slots.slots[0].grad_outputs[0].mul_(0)  # a backward that zeroes the grad_output it was handed
        assert [v.kind.value for v in slots.check(results, "fwd+bwd")[0].violations] == ["input_mutation"]


def test_work_concentrated_in_some_calls_of_a_round_is_charged_by_the_round():
    from kernellab.evaluate.rounds import round_statistic

    honest = [[100.0, 101.0, 99.5, 100.5] for _ in range(6)]
    stats, concentrated = round_statistic(honest)
    assert not concentrated and 99.5 <= stats.median <= 101.0
    shifted = [[400.0, 1.0, 1.0, 1.0] for _ in range(6)]  # one call does the round's work
    stats, concentrated = round_statistic(shifted)
    assert concentrated and stats.median == pytest.approx(100.75)


# ------------------------------------------------------------------------------------ the whole protocol


def _variant(tmp_path: Path, name: str, forward_tail: str) -> Path:
    """The honest RMSNorm candidate, misbehaving from its (LIMIT+1)-th call in the process on."""
    source = HONEST_RMSNORM.read_text().replace("class ModelNew(nn.Module):", "class _Honest(nn.Module):")
    source += f'''

_CALLS = [0]


class ModelNew(_Honest):
    def forward(self, x: torch.Tensor):
        _CALLS[0] += 1
        y = super().forward(x)
        if _CALLS[0] > LIMIT:
{forward_tail}
        return y
'''
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return path


def _checked_calls(session: EvalSession) -> int:
    """How many calls the checks make before the timing stage: every `run` request is one call."""
    verdict = session.evaluate(HONEST_RMSNORM)
    assert verdict.status.value == "passed", verdict.error
    return int(session.last_op_stats["run"][0])


@pytest.mark.parametrize("name, tail, kind", [
    ("stale_after_checks", "            return torch.zeros_like(y)", "phase_detection"),
    ("container_after_checks", "            return [y, 1.0]", "output_contract"),
])
def test_a_candidate_that_changes_once_the_checks_are_over_is_rejected(tmp_path, rmsnorm_session, name, tail, kind):
    limit = _checked_calls(rmsnorm_session)
    path = _variant(tmp_path, name, tail)
    path.write_text(path.read_text().replace("LIMIT", str(limit)))
    verdict = rmsnorm_session.evaluate(path)
    assert verdict.failed_stage is not None and verdict.failed_stage.value == "timing", verdict.error
    assert kind in verdict.violation_kinds(), verdict.violations
    # The same file one call earlier is caught by the checks themselves: the limit is exact.
    path.write_text(path.read_text().replace(f"> {limit}:", f"> {limit - 1}:"))
    early = rmsnorm_session.evaluate(path)
    assert early.failed_stage is not None and early.failed_stage.value != "timing"


# ------------------------------------------------------------------------------------ on a GPU


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_a_gpu_every_timed_call_is_checked_and_timings_are_reported(tmp_path):
    options = EvalOptions(**{**OPTIONS, "timing_budget_s": 0.1})
    with EvalSession(load_task(RMSNORM), options) as session:
        honest = session.evaluate(HONEST_RMSNORM)
        assert honest.status.value == "passed", honest.error
        assert honest.timings and all(t.candidate_us > 0 and t.samples >= 1 for t in honest.timings)
        limit = int(session.last_op_stats["run"][0])
        path = _variant(tmp_path, "stale_on_gpu", "            return torch.zeros_like(y)")
        path.write_text(path.read_text().replace("LIMIT", str(limit)))
        cheat = session.evaluate(path)
    assert cheat.failed_stage is not None and cheat.failed_stage.value == "timing", cheat.error
    assert "phase_detection" in cheat.violation_kinds()


def test_no_candidate_code_runs_between_a_timed_calls_loading_and_its_start(tmp_path):
    """A finalizer armed from a weakref callback on each output, run by the collector inside the
    harness's loading of the next call's values, returns zeros there (the canary variant of the
    corpus's ``gc_finalizer_in_loading``): the collector is off in a timing round and every output
    lives until the round is over, so it never runs there, and every timed call is right."""
    source = (ADVERSARIAL / "candidates" / "vector_add" / "gc_finalizer_in_loading.py").read_text()
    canary = tmp_path / "canary.py"
    canary.write_text(source.replace("ZEROS = False", "ZEROS = True"))
    with EvalSession(load_task(ADVERSARIAL / "tasks" / "vector_add"), EvalOptions(**OPTIONS)) as session:
        verdict = session.evaluate(canary)
    assert verdict.status.value == "passed" and verdict.correct and not verdict.violations, \
        (verdict.error, [v.detail for v in verdict.violations])


def test_the_seen_timing_rows_always_have_a_traced_round_and_a_quarter_on_average():
    from kernellab.evaluate.stages.performance import TIMED_TRACE_SHARE, _traced_rows

    draws = [_traced_rows(18, at_least_one=True) for _ in range(400)]
    assert all(draws) and all(rows <= set(range(18)) for rows in draws)
    mean = sum(len(rows) for rows in draws) / len(draws)
    assert 0.8 * 18 * TIMED_TRACE_SHARE < mean < 1.3 * 18 * TIMED_TRACE_SHARE
    holdout = [_traced_rows(1, at_least_one=False) for _ in range(400)]
    assert 0 < sum(bool(rows) for rows in holdout) < 200  # a quarter of holdout rows, none forced


class _CountedRounds:
    """A row of rounds whose timed calls all take 10 µs (traced ones ``traced_us``): which rounds
    ``Rounds.run`` traces, and whether a traced round's times ever become samples (they must not:
    the profiler slows the calls)."""

    def __init__(self, trace_at: int, traced_us: float = 15.0):
        from types import SimpleNamespace

        from kernellab.evaluate.rounds import Rounds
        from kernellab.sandbox.round_clock import RoundTimes
        from kernellab.sandbox.timing_stats import TimingPlan

        log = self.log = []

        class Row(Rounds):
            def traced_round(self, rounds: int) -> int | None:
                return trace_at

            def one_round(self, method, warm_ms=0.0, peak=False, trace=False):
                log.append(trace)
                return RoundTimes("events", [traced_us if trace else 10.0] * 4, 4, 0.001, 10.0, 10.0)

        self.row = Row(SimpleNamespace(slots=[None] * 4), TimingPlan(warmup_ms=0.0, min_samples=20))


@pytest.mark.parametrize("trace_at, traced_index", [(1, 2), (100, None)])
def test_a_traced_timing_round_is_never_a_sample_and_a_traced_row_is_traced_after_its_end(trace_at, traced_index):
    counted = _CountedRounds(trace_at)
    times, stats, _ = counted.row.run("events")
    traced = [i for i, t in enumerate(counted.log) if t]
    assert traced[-1] == len(counted.log) - 1  # always a traced round after the last sample
    # and the drawn one, where the row reached it
    assert traced[:-1] == ([traced_index] if traced_index is not None else [])
    assert stats.median == 10.0 and max(times.samples_us) == 10.0  # its slower calls are not samples


def test_a_row_whose_traced_calls_are_far_slower_than_its_timed_ones_ends_without_a_time():
    """Own kernels while the profiler is on, a library's otherwise: the traced calls read the own
    kernels' time. Beyond what the timed calls explain (1.2x + 5 µs), the row ends and the judge is told."""
    counted = _CountedRounds(1, traced_us=1000.0)
    told = []
    counted.row.traced_slower = lambda traced, median: told.append((traced, median))
    assert counted.row.run("events") is None
    assert told == [(1000.0, 10.0)]


LIBRARY_IN_TIMED_ROUNDS = '''
import weakref

import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _add(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(c_ptr + offs, tl.load(a_ptr + offs, mask=mask) + tl.load(b_ptr + offs, mask=mask), mask=mask)


def _library(self, other):
    return self.add(other)


_SEEN = {}


class ModelNew(nn.Module):
    def forward(self, a, b):
        first = _SEEN.get(id(a)) is None or _SEEN[id(a)]() is not a
        _SEEN[id(a)] = weakref.ref(a)
        if first and a._version > 0:  # new to it, yet already loaded by copy_: a timing round's input
            return _library(a, b)
        c = a.new_empty(a.shape)
        if a.numel():
            _add[(triton.cdiv(a.numel(), 1024),)](a, b, c, a.numel(), BLOCK=1024)
        return c
'''


def test_the_cpu_dry_run_of_the_timed_calls_is_policy_evidence(tmp_path):
    """Without a GPU every call of the timing stage's dry run runs under the op log, as checked calls
    do: library compute on the timed calls only is a strict task's ``policy`` violation in ``timing``."""
    path = tmp_path / "library_in_timed_rounds.py"
    path.write_text(LIBRARY_IN_TIMED_ROUNDS)
    # the dry run is what a machine without a GPU runs: on the CPU also where a GPU is (there, the
    # checked calls' trace already sees the library's kernel and the evaluation ends at smoke)
    options = EvalOptions(**OPTIONS, device="cpu")
    with EvalSession(load_task(ADVERSARIAL / "tasks" / "vector_add"), options) as session:
        verdict = session.evaluate(path)
    assert verdict.failed_stage is not None and verdict.failed_stage.value == "timing", verdict.error
    assert "policy" in verdict.violation_kinds() and "[timed calls]" in verdict.error, verdict.error


def test_every_row_of_a_strict_task_has_a_traced_round():
    """A candidate sees whether it is traced; on a row without a traced round it could run a
    library's kernels unseen. Where the policy is strict, no row goes without one."""
    from kernellab.evaluate.stages.performance import _traced_rows

    assert all(_traced_rows(18, at_least_one=False, share=1.0) == set(range(18)) for _ in range(50))
