"""Correctness stages: smoke, shape_sweep, stability, determinism, edge, backward and holdout.

Each runs the candidate on reference cases through ``checking.run_case`` and records one
``ConfigCheck`` per (config, dtype). The shape sweep also hunts output caches: its second trial
writes new values into the *same* input tensors (same pointers), its third uses fresh tensors, and
a wrong answer that equals an earlier trial's answer is named ``output_cache``.
"""

from __future__ import annotations

import torch

from kernellab.evaluate import seeds
from kernellab.evaluate.checking import CallOutcome, bitwise_equal, run_case
from kernellab.evaluate.reference import Case
from kernellab.evaluate.tolerance import adversarial_factor, normalised_error
from kernellab.evaluate.trace_sampling import traced
from kernellab.evaluate.verdict import WRONG_OUTPUT_KINDS, ConfigCheck, Stage, StageResult, ViolationKind
from kernellab.sandbox.candidate import CandidateError, ChildFailure
from kernellab.tasks.materialize import SHIFTED_KINDS
from kernellab.tasks.model import Config, InputDomain, Visibility

STABILITY_KINDS = ("large", "tiny", "mixed", "heavy_tailed", "constant_rows", "positive_rows")
# A stability variant is skipped for a dtype when eager PyTorch itself is this far off in it:
# then the input is outside what the dtype can represent, and no kernel can be asked to do better.
EAGER_USELESS_ERR = 0.5


def _configs(ctx, visibility: Visibility) -> tuple[list[Config], list[str]]:
    """Configs of a class that this device can run; the skipped ones are reported."""
    chosen, skipped = [], []
    for config in ctx.session.task.configs_of(visibility):
        (chosen if ctx.session.fits_device(config) else skipped).append(config)
    return chosen, [c.label for c in skipped]


def _small_or_first(ctx) -> list[Config]:
    """Where no seen config fits this device: the small configs, or the config the load stage ran
    (a task without small configs must still be checked on something, never index an empty list)."""
    from kernellab.evaluate.stages.load import first_config

    return ctx.session.task.configs_of(Visibility.SMALL) or [first_config(ctx.session)]


def _record(ctx, result: StageResult, outcome: CallOutcome) -> bool:
    result.configs.append(outcome.check)
    for v in outcome.violations:
        ctx.violate(v.kind, v.detail)
    if not outcome.passed:
        result.passed = False
    return outcome.passed


def _over(ctx, stage: Stage, configs: list[Config], skipped: list[str], *, backward: bool = False,
          seed_offset: int = 0, once: bool = False) -> StageResult:
    result = StageResult(stage, True)
    if skipped:
        result.skipped = f"too large for the interpreter: {', '.join(skipped)}"
    for config in configs:
        for dtype in ctx.session.resolved.dtypes:
            # No local keeps a case (or a call's outputs) alive while the next is built: the session
            # may have evicted it to make room, and a large task's cases take tens of GB.
            if not _record(ctx, result, run_case(ctx, ctx.session.case(
                    config, dtype, ctx.session.options.seed + seed_offset, backward=backward, once=once),
                    backward=backward, profile=traced(ctx, stage, f"{config.label}|{dtype}", 0, 1))):
                return result
    if not configs and not skipped:
        result.skipped = f"the task has no {stage.value} configs"
    return result


def smoke(ctx) -> StageResult:
    configs = ctx.session.task.configs_of(Visibility.SMALL)
    if not configs:
        from kernellab.evaluate.stages.load import first_config

        configs = [first_config(ctx.session)]
    return _over(ctx, Stage.SMOKE, configs, [])


def shape_sweep(ctx) -> StageResult:
    configs, skipped = _configs(ctx, Visibility.SEEN)
    result = StageResult(Stage.SHAPE_SWEEP, True)
    if skipped:
        result.skipped = f"too large for the interpreter: {', '.join(skipped)}"
    if not configs:  # the interpreter: sweep the small configs, so the cache checks still run
        configs = _small_or_first(ctx)
    seed = ctx.session.options.seed
    trials = max(1, ctx.session.options.trials)
    for config in configs:
        for dtype in ctx.session.resolved.dtypes:
            earlier: list[Case] = []
            first = None
            for trial in range(trials):
                case = ctx.session.case(config, dtype, seeds.trial(seed, seeds.SWEEP, trial))
                same = trial == 1 and first is not None and _same_layout(case, first)
                if same:
                    case = _same_pointers(case, first)  # new values at the same addresses
                profile = traced(ctx, Stage.SHAPE_SWEEP, f"{config.label}|{dtype}", trial, trials)
                outcome = run_case(ctx, case, profile=profile, same_buffers=same)
                if not outcome.passed and earlier and _matches_earlier(outcome, earlier):
                    ctx.violate(ViolationKind.OUTPUT_CACHE,
                                f"{config.label} {dtype}: trial {trial} returned the output of an earlier "
                                f"call on different inputs")
                    outcome.check.note = "stale output from an earlier call"
                if not _record(ctx, result, outcome):
                    return result
                earlier.append(case)
                first = first or case
    return result


def _same_layout(case: Case, first: Case) -> bool:
    """Whether ``case``'s values fit ``first``'s memory: not where an input's size depends on the
    draw (a reference whose ``get_inputs`` sizes a buffer by a random total)."""
    return len(case.pristine) == len(first.inputs) and all(
        not isinstance(v, torch.Tensor) or isinstance(t, torch.Tensor) and v.shape == t.shape and v.dtype == t.dtype
        for v, t in zip(case.pristine, first.inputs))


def _same_pointers(case: Case, first: Case) -> Case:
    """A view of ``case`` whose live inputs are ``first``'s tensors (restored with ``case``'s values)."""
    import copy

    shared = copy.copy(case)
    shared.inputs = first.inputs
    return shared


def _matches_earlier(outcome: CallOutcome, earlier: list[Case]) -> bool:
    for case in earlier:
        refs = case.ref_outputs[:case.n_outputs]
        if len(refs) != len(outcome.outputs):
            continue
        if all(isinstance(o, torch.Tensor) and o.shape == r.shape and r.is_floating_point()
               and normalised_error(o.to(r.device), r)[1] <= tol
               for o, r, tol in zip(outcome.outputs, refs, case.tolerances)):
            return True
    return False


def stability(ctx) -> StageResult:
    """Adversarial inputs inside each input's declared domain (``materialize.perturb_for_domain``):
    the ``STABILITY_KINDS`` perturb every floating input at once; the shifted kinds (one-signed
    values far from zero: large positive and negative offsets, and their analogues for positive,
    unit and probability inputs) perturb one input at a time, each its own variant ``kind:name``."""
    seen, _ = _configs(ctx, Visibility.SEEN)
    configs = seen[:1] or _small_or_first(ctx)
    result = StageResult(Stage.STABILITY, True)
    notes, outside = [], []
    for config in configs:
        for dtype in ctx.session.resolved.dtypes:
            shifted: list[str] | None = None
            kinds = list(STABILITY_KINDS)
            k = -1
            while kinds:
                kind = kinds.pop(0)
                k += 1
                try:
                    case = ctx.session.case(config, dtype, ctx.session.options.seed + seeds.STABILITY, variant=kind,
                                            once=True)
                except torch.OutOfMemoryError:
                    raise
                except (RuntimeError, ValueError, ArithmeticError) as exc:
                    # The reference itself refuses these inputs (a solve of a matrix made singular by
                    # constant rows, a log of a shifted value): outside the op's domain, not checkable.
                    outside.append(f"{kind}/{dtype} ({type(exc).__name__})")
                    continue
                if shifted is None:  # the inputs a shifted variant can move, read off the first case
                    shifted = [f"{k}:{name}" for name in _shiftable(case) for k in SHIFTED_KINDS]
                    kinds += shifted
                if not _eager_meaningful(case):
                    notes.append(f"{kind}/{dtype}")
                    continue
                profile = traced(ctx, Stage.STABILITY, f"{config.label}|{dtype}", k, len(STABILITY_KINDS))
                outcome = run_case(ctx, case, label=f"{config.label} [{kind}]", profile=profile)
                if not _record(ctx, result, outcome):
                    return result
    skipped = []
    if notes:
        skipped.append(f"eager PyTorch itself is inaccurate there, not checked: {', '.join(notes)}")
    if outside:
        skipped.append(f"the reference fails on these inputs (outside its domain), not checked: {', '.join(outside)}")
    if skipped:
        result.skipped = "; ".join(skipped)
    return result


def _shiftable(case: Case) -> list[str]:
    """Inputs a shifted variant moves: floating tensors that are not indices and not in ``mutates``."""
    task = case.problem.task
    return [name for name, value in zip(case.names, case.pristine)
            if isinstance(value, torch.Tensor) and value.is_floating_point() and name not in task.mutates
            and task.domain_of(name) is not InputDomain.INDEX]


def _eager_meaningful(case: Case) -> bool:
    factor = adversarial_factor(case.problem.task.tolerance_factor)
    return all(t == t and t / factor <= EAGER_USELESS_ERR for t in case.tolerances) and all(
        bool(torch.isfinite(r).all()) for r in case.ref_outputs if r.is_floating_point())


def determinism(ctx) -> StageResult:
    seen, _ = _configs(ctx, Visibility.SEEN)
    config = (seen or _small_or_first(ctx))[0]
    dtype = ctx.session.resolved.dtypes[0]
    case = ctx.session.case(config, dtype, ctx.session.options.seed)
    first = run_case(ctx, case, profile=traced(ctx, Stage.DETERMINISM, config.label, 0, 2))
    second = run_case(ctx, case, profile=traced(ctx, Stage.DETERMINISM, config.label, 1, 2))
    result = StageResult(Stage.DETERMINISM, True)
    comparable = len(first.outputs) == len(second.outputs) and all(
        isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype
        for a, b in zip(first.outputs, second.outputs))
    bitwise = comparable and all(bitwise_equal(a, b) for a, b in zip(first.outputs, second.outputs))
    # Without bitwise equality both calls must still be within tolerance of the reference (checked
    # above): atomics reorder float additions legitimately. The verdict notes it.
    same = bitwise or (comparable and first.passed and second.passed)
    if same and not bitwise:
        ctx.verdict.notes.append("identical inputs gave outputs that differ in the last bits (atomics?)")
    check = ConfigCheck(config=config.label, dtype=dtype, max_abs_err=None, max_rel_err=None, tolerance=0.0,
                        passed=same, note=None if same else "two calls on identical inputs differ")
    result.configs.append(check)
    result.passed = same and first.passed and second.passed
    for outcome in (first, second):
        for v in outcome.violations:
            ctx.violate(v.kind, v.detail)
    return result


def edge(ctx) -> StageResult:
    configs, skipped = _configs(ctx, Visibility.EDGE)
    return _over(ctx, Stage.EDGE, configs, skipped, seed_offset=seeds.EDGE, once=True)


def backward(ctx) -> StageResult | None:
    if not ctx.session.task.backward:
        return None
    configs, skipped = _configs(ctx, Visibility.SEEN)
    if not configs:
        configs, skipped = ctx.session.task.configs_of(Visibility.SMALL), skipped
    return _over(ctx, Stage.BACKWARD, configs, skipped, backward=True, seed_offset=seeds.BACKWARD)


def holdout(ctx) -> StageResult | None:
    """Holdout configs: never shown to agents; failures are reported apart from seen correctness.

    Every holdout config is checked in every dtype; it is timed in the dtypes
    ``Resolved.holdout_timing_dtypes`` names (one per config by default: the holdout speedup is one
    number per config, and timing each dtype tripled this stage's timing).

    A candidate that raises, crashes or hangs on a holdout config has failed that config, and so the
    holdout (``holdout.correct = false``, exit status 3 when the seen configs passed): the stage
    catches it per config instead of letting it end the stage unjudged. A child that died or hung
    cannot answer again, so the configs after it are reported unchecked; the holdout has failed
    already."""
    if ctx.session.options.configs == "seen" or ctx.verdict.failed_stage is not None:
        return None
    configs, skipped = _configs(ctx, Visibility.HOLDOUT)
    result = StageResult(Stage.HOLDOUT, True)
    skips = [f"too large for the interpreter: {', '.join(skipped)}"] if skipped else []
    failed, unknown, unchecked = [], [], []
    gone: str | None = None  # the child died or hung: nothing more can be asked of it
    timed = ctx.session.resolved.holdout_timing_dtypes()
    timing = ctx.session.device == "cuda" and ctx.session.options.time_holdout
    for config in configs:
        for dtype in ctx.session.resolved.dtypes:
            where = f"{config.label} {dtype}"
            if gone is not None:
                unchecked.append(where)
                continue
            try:
                outcome = run_case(ctx, ctx.session.case(config, dtype, ctx.session.options.seed + seeds.HOLDOUT,
                                                         once=not (timing and dtype in timed)),  # a timed one is used again
                                 profile=traced(ctx, Stage.HOLDOUT, f"{config.label}|{dtype}", 0, 1))
            except (CandidateError, ChildFailure) as exc:
                crash = _crash(ctx, exc, config.label, dtype)
                if crash is None:  # an interpreter gap: says nothing about the candidate
                    unknown.append(where)
                    continue
                result.configs.append(crash)
                failed.append(where)
                result.error = result.error or f"{where}: {crash.note}"
                gone = str(exc) if isinstance(exc, ChildFailure) else None
                continue
            result.configs.append(outcome.check)
            for v in outcome.violations:  # evidence (policy, streams, inputs) counts on unseen shapes too
                if v.kind in WRONG_OUTPUT_KINDS and not outcome.passed:  # how a wrong output is wrong:
                    outcome.check.note = f"{outcome.check.note or 'wrong'} ({v.kind.value}: {v.detail})"
                    continue  # the holdout's failure, not a violation of the verdict
                ctx.violate(v.kind, v.detail)
            if not outcome.passed:
                failed.append(where)
            del outcome  # its outputs must not outlive the next case's build (as in _over)
    if unchecked:
        skips.append(f"not checked, the candidate's process was gone: {', '.join(unchecked)}")
    if unknown:
        skips.append(f"the Triton interpreter cannot run the candidate on: {', '.join(unknown)}")
    result.skipped = "; ".join(skips) or None
    result.passed = not failed
    holdout = ctx.verdict.holdout
    holdout.correct = False if failed else None if not configs or unknown else True
    holdout.failed_configs = failed
    if timing and configs and holdout.correct and timed:
        _time_holdout(ctx, configs, timed, result)
    return result


def _crash(ctx, exc: CandidateError | ChildFailure, config: str, dtype: str) -> ConfigCheck | None:
    """The failed check a raise, a crash or a hang on one config is; None for an interpreter gap the
    harness recognised (``pipeline.looks_like_interpreter_gap``)."""
    from kernellab.evaluate.pipeline import looks_like_interpreter_gap

    if isinstance(exc, CandidateError):
        if ctx.session.resolved.interpret and looks_like_interpreter_gap(exc):
            return None
        note = f"raised {exc}"
    else:
        if exc.exitcode == 0:
            ctx.violate(ViolationKind.PROCESS_ESCAPE, f"holdout {config}: the candidate ended its own process")
        note = str(exc)
    return ConfigCheck(config=config, dtype=dtype, max_abs_err=None, max_rel_err=None, tolerance=None,
                       passed=False, note=note)


def _time_holdout(ctx, configs: list[Config], timed: tuple[str, ...], result: StageResult) -> None:
    """Time the holdout configs, one at a time; wrong outputs, a raise, a crash or a hang while timed
    fail the holdout (the configs after a crash or hang are not timed)."""
    from kernellab.evaluate.stages.performance import time_configs

    holdout = ctx.verdict.holdout
    if len(timed) < len(ctx.session.resolved.dtypes):
        note = f"holdout configs timed in {', '.join(timed)} only (checked in every dtype)"
        if note not in ctx.verdict.notes:
            ctx.verdict.notes.append(note)
    before = len(ctx.timing_failures)
    for config in configs:
        try:
            holdout.timings += time_configs(ctx, [config], holdout=True, dtypes=timed)
        except (CandidateError, ChildFailure) as exc:
            crash = _crash(ctx, exc, config.label, "timed")
            holdout.correct, result.passed = False, False
            holdout.failed_configs.append(f"{config.label} (timed)")
            result.error = result.error or f"{config.label} while timed: {crash.note if crash else exc}"
            if isinstance(exc, ChildFailure):
                break
    holdout.speedup = _geomeans(holdout.timings)
    wrong = ctx.timing_failures[before:]
    if wrong:  # wrong outputs on the holdout timing inputs: the holdout is not correct
        holdout.correct = False
        holdout.failed_configs += [f"{c.config} {c.dtype}" for c in wrong]
        result.passed = False


def _geomeans(timings) -> dict[str, float | None]:
    from kernellab.evaluate.stages.performance import geomean_speedups

    return geomean_speedups(timings)
