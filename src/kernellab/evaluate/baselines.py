"""Baselines timed by the judge: eager PyTorch, ``torch.compile(dynamic=False)``, the task's baseline kernel.

They are timed on the same GPU, the same input slots and with the same method and rounds as the
candidate (``rounds.LocalRounds``: a power-capped kernel's time follows the device's pattern of work
and pauses, so both are measured under the same one), and
cached per (task hash, config, dtype, phase, device, versions, ``timing_stats.METHOD_VERSION``),
because a compile baseline costs seconds to tens of seconds and does not change between candidates.
Eager is re-timed briefly as a drift check, on the first timing row of each evaluation and then on
every row once one drifted: when it moved more than ``DRIFT_PCT`` from the cached value, that row's
baselines are measured again.
One check per evaluation catches what drift is about (clocks, power state, another process on the
GPU, a cache from another day) without re-timing eager 36 times per candidate.
``EvalOptions.cached_baselines=False`` times every row afresh (a finalist's re-timing rounds).

``torch.compile`` runs only for a row the cache does not have (or that recorded no compile result):
on drift, eager and the baseline kernel are re-timed and the cached compile time is scaled by
eager's drift. An evaluation whose rows are all cached never imports Inductor.
"""

from __future__ import annotations

import copy
import json
import logging
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable

import torch

from kernellab.evaluate.reference import PARAM_SEED, Case
from kernellab.evaluate.rounds import LocalRounds
from kernellab.evaluate.timing_slots import TimingSlots
from kernellab.sandbox.clock import peak_memory
from kernellab.sandbox.timing_stats import METHOD_VERSION, TimingPlan
from kernellab.tasks.materialize import build_model, cast_model, copy_matching_state, flatten_outputs
from kernellab.tasks.model import Config
from kernellab.tasks.module import build_module

log = logging.getLogger(__name__)

DRIFT_PCT = 5.0


@dataclass
class BaselineTimes:
    eager_us: float | None
    compile_us: float | None
    baseline_us: float | None
    notes: tuple[str, ...] = ()
    drift_checked: bool = False  # a cached row whose eager time was re-measured and had not moved


def _cache_file(session) -> Path:
    return session.resolved.cache_dir / "baselines.json"


def _cache_key(session, config: Config, dtype: str, backward: bool, method: str) -> str:
    v = session.versions
    return "|".join([session.task.sha256[:16], config.label, dtype, "fwd+bwd" if backward else "fwd", method,
                     session.device_label, v["torch"], v["triton"], f"timing{METHOD_VERSION}"])


def _read_cache(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _write_cache(path: Path, key: str, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _read_cache(path)
    data[key] = value
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(path)


def _caller(model: Callable, sets: list[Case], backward: bool) -> Callable[[int], Any]:
    if not backward:
        def call(i: int) -> Any:
            with torch.no_grad():
                return model(*sets[i].inputs)
        return call
    params = [p for p in getattr(model, "parameters", lambda: [])() if p.requires_grad]

    def call_bwd(i: int) -> Any:
        case = sets[i]
        args = list(case.inputs)
        for j in case.grad_input_indices():
            args[j] = args[j].detach().requires_grad_(True)
        outs = model(*args)
        flat = flatten_outputs(outs)
        wrt = [args[j] for j in case.grad_input_indices()] + params
        return torch.autograd.grad(flat, wrt, case.grad_outputs, allow_unused=True)

    return call_bwd


def eager_peak_mem_bytes(slots: TimingSlots, backward: bool) -> int | None:
    """Peak CUDA memory of one eager call on the first timed input set, above what was allocated
    before and outputs included: what the candidate's timing measures of the candidate, so "peak
    memory vs eager" compares like with like. None when the inputs are not on a GPU."""
    sets = slots.as_cases()
    device = next((a.device for a in sets[0].inputs if isinstance(a, torch.Tensor) and a.is_cuda), None)
    if device is None:
        return None
    return peak_memory(_caller(sets[0].eager_model, sets, backward), (0,), device=device)


def _median_us(call: Callable[[int], Any], slots: TimingSlots, plan: TimingPlan, method: str) -> float:
    measured = LocalRounds(call, slots, plan).run(method)
    if measured is None:
        raise RuntimeError("the baseline could not be timed in rounds")
    return measured[1].median


def _time_compiled(slots: TimingSlots, backward: bool, plan: TimingPlan, method: str,
                   notes: list[str]) -> float | None:
    """``torch.compile(dynamic=False)`` of a copy of the eager model, timed; None (with a note) when
    Dynamo captured no graph, which would make the "compile" baseline eager in disguise."""
    import torch._dynamo

    try:
        torch._dynamo.reset()
        before = torch._dynamo.utils.counters["stats"]["unique_graphs"]
        sets = slots.as_cases()
        call = _caller(torch.compile(copy.deepcopy(sets[0].eager_model), dynamic=False), sets, backward)
        call(0)
        if torch._dynamo.utils.counters["stats"]["unique_graphs"] <= before:
            notes.append("torch.compile captured no graph (fell back to eager): no compile baseline")
            return None
        return _median_us(call, slots, plan, method)
    except Exception as exc:  # noqa: BLE001 - a reference Inductor cannot compile has no compile baseline
        notes.append(f"torch.compile failed: {type(exc).__name__}: {str(exc)[:200]}")
        return None


def _baseline_model(session, sets: list[Case]) -> torch.nn.Module:
    """The task's own baseline kernel, built like a candidate: same seeding, the reference's weights."""
    module = build_module(session.task.baseline_source, {}, name="baseline", where=session.task.root / "baseline.py")
    case = sets[0]
    model = cast_model(build_model(module.ModelNew, case.init_inputs, PARAM_SEED), case.dtype,
                       session.task.keep_dtype, session.device)
    copy_matching_state(case.state, model)
    return model


def baseline_times(session, config: Config, dtype: str, backward: bool, slots: TimingSlots,
                   plan: TimingPlan, method: str, with_compile: bool, check_drift: bool = True) -> BaselineTimes:
    """Baselines timed with ``method``, the one the candidate got, so both pay the same fixed costs.

    ``check_drift=False`` trusts a cached row without re-timing eager (the evaluation already
    checked another row and found no drift)."""
    key = _cache_key(session, config, dtype, backward, method)
    cache_file = _cache_file(session)
    sets = slots.as_cases()
    eager_call = _caller(sets[0].eager_model, sets, backward)
    cached = _read_cache(cache_file).get(key) if session.options.cached_baselines else None
    usable = cached and cached.get("eager_us") and (cached.get("compile_us") is not None or not with_compile
                                                     or cached.get("compile_note"))
    # Without the compile baseline asked for, a cached compile time is not reported either: a campaign
    # with compile_baseline=false would otherwise show speedups vs compile for whichever tasks an
    # earlier evaluation happened to compile.
    cached_compile = cached.get("compile_us") if cached and with_compile else None
    if usable and not check_drift:
        return BaselineTimes(cached["eager_us"], cached_compile, cached.get("baseline_us"))
    quick = replace(plan, max_samples=max(plan.min_samples, 60), budget_s=min(plan.budget_s, 0.3))
    eager_now = _median_us(eager_call, slots, quick, method)
    if usable and _steady(eager_now, cached):
        return BaselineTimes(cached["eager_us"], cached_compile, cached.get("baseline_us"),
                             drift_checked=True)
    notes = []
    eager_us = _median_us(eager_call, slots, plan, method)
    if usable and _steady(eager_us, cached):  # the quick measurement was the outlier, not the device
        return BaselineTimes(cached["eager_us"], cached_compile, cached.get("baseline_us"),
                             drift_checked=True)
    if cached:
        notes.append(f"eager drifted from {cached['eager_us']:.1f} to {eager_us:.1f} µs; baselines re-timed")
    compile_note = cached.get("compile_note") if usable else None
    if not with_compile:
        compile_us = None
    elif usable:
        # A drift is the device's (clocks, power, a neighbour), not Inductor's: the cached compile time
        # is scaled by eager's drift instead of compiling again (an Inductor compile per row, seconds
        # each, was what a cold evaluation with filled caches spent once eager had moved).
        compile_us = _scaled(cached.get("compile_us"), eager_us, cached)
        if compile_us is not None:
            notes.append("torch.compile baseline scaled by eager's drift, not recompiled")
    else:
        compile_us = _time_compiled(slots, backward, plan, method, notes)
    baseline_us = None
    if session.task.baseline_source:
        try:
            model = _baseline_model(session, sets)
            baseline_us = _median_us(_caller(model, sets, backward), slots, plan, method)
        except Exception as exc:  # noqa: BLE001
            notes.append(f"baseline kernel failed: {type(exc).__name__}: {str(exc)[:200]}")
    compile_note = compile_note or next((n for n in notes if n.startswith("torch.compile failed")
                                         or n.startswith("torch.compile captured")), None)
    if with_compile or not cached:
        _write_cache(cache_file, key, {"eager_us": eager_us, "compile_us": compile_us, "baseline_us": baseline_us,
                                       "compile_note": compile_note})
    return BaselineTimes(eager_us, compile_us, baseline_us, tuple(notes))


def _steady(eager_us: float, cached: dict[str, Any]) -> bool:
    return abs(eager_us / cached["eager_us"] - 1) * 100 <= DRIFT_PCT


def _scaled(compile_us: float | None, eager_us: float, cached: dict[str, Any]) -> float | None:
    """The cached compile time moved as eager did: their ratio, measured together, is kept."""
    return None if compile_us is None else compile_us * eager_us / cached["eager_us"]
