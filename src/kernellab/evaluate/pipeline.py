"""The gated pipeline: static → load → smoke → shape_sweep → stability → determinism → edge →
backward → sanitize → timing → holdout. A correctness stage that fails ends the run; timing needs a correct
candidate; the holdout stage is scored apart and never makes a seen-correct candidate incorrect.
"""

from __future__ import annotations

import contextlib
import logging
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import torch

from kernellab.evaluate import handover
from kernellab.evaluate.reference import PARAM_SEED, Case
from kernellab.evaluate.static_scan import ScanResult
from kernellab.evaluate.verdict import Stage, StageResult, Status, Verdict, Violation, ViolationKind
from kernellab.sandbox.candidate import CandidateError, CandidateProcess, ChildFailure
from kernellab.sandbox.interpreter_gap import GAP_NAMES
from kernellab.sandbox.interpreter_gap import describe as describe_gap
from kernellab.sandbox.requests import InstantiateRequest
from kernellab.tasks.model import Policy, TaskError

log = logging.getLogger(__name__)


@dataclass
class EvalContext:
    session: "EvalSession"  # noqa: F821 - imported lazily to keep the module graph acyclic
    path: Path
    source: str
    verdict: Verdict
    scan: ScanResult | None = None
    child: CandidateProcess | None = None
    loaded_key: str | None = None
    baselines_steady: bool = False  # a cached baseline row was re-checked this evaluation and had not drifted
    # When this evaluation last got the GPU from another one (perf_counter), None if it never waited:
    # a row timed soon after may see that one's queued kernels (``performance._measured_row``).
    handed_over_at: float | None = None
    timed_again: bool = False  # a row was timed a second time already (once per evaluation)
    timing_failures: list = field(default_factory=list)  # wrong outputs on the timing inputs
    import_seconds: float = 0.0  # import of the candidate module (builds load_inline extensions)
    compile_ahead: "CompileAhead | None" = None  # noqa: F821 - helpers compiling ahead (compile_ahead.py)
    # What the last instantiation handed the child (copies of the case's init arguments and weights),
    # the judge's own values, and the config: compared after every checked call (``checking``).
    handed_at_instantiate: tuple | None = None

    @property
    def policy(self) -> Policy:
        return self.session.resolved.policy

    @property
    def is_own_reference(self) -> bool:
        """The candidate is the task's reference file itself, whose class is Model, not ModelNew."""
        from kernellab.tasks.materialize import reference_file

        return self.path == reference_file(self.session.task).resolve()

    @property
    def requires_own_kernel(self) -> bool:
        return self.policy is not Policy.OFF

    @property
    def timeout(self) -> float:
        return self.session.options.request_timeout_s

    def model_key(self, case: Case) -> str:
        """Make sure the child holds a candidate model for this case's config and dtype."""
        key = f"{case.problem.config.label}|{case.dtype}"
        if self.loaded_key != key:
            # The first instance may build its kernels in __init__ (load_inline): the compile budget.
            timeout = self.timeout if self.loaded_key else max(self.session.options.compile_timeout_s, self.timeout)
            # Copies (``handover``): the case's weights serve every later candidate and the baselines.
            own = {"init_inputs": case.init_inputs, "state": case.state}
            handed = handover.copies(own)
            if self.session.device == "cuda":
                torch.cuda.synchronize()  # the copies have landed before the child maps them (as restore_inputs)
            value = self.child.ask(InstantiateRequest(key, handed["init_inputs"], PARAM_SEED, handed["state"],
                                                      case.dtype, list(case.problem.task.keep_dtype)), timeout)
            # On the CPU the child holds its own copy and sends back what it holds after instantiating.
            after = value.get("received_after") if isinstance(value, dict) else None
            self.handed_at_instantiate = (after if after is not None else handed, own, case.problem.config.label)
            self.loaded_key = key
        return key

    def quiet_gpu(self):
        """While timing: the helpers compiling ahead, if any, are paused."""
        return self.compile_ahead.paused() if self.compile_ahead is not None else contextlib.nullcontext()

    def violate(self, kind: ViolationKind, detail: str) -> None:
        if not any(v.kind is kind and v.detail == detail for v in self.verdict.violations):
            self.verdict.violations.append(Violation(kind, detail))


def _stage_table() -> list[tuple[Stage, Callable]]:
    from kernellab.evaluate.stages import correctness, load, performance, sanitize, static

    return [(Stage.STATIC, static.run), (Stage.LOAD, load.run), (Stage.SMOKE, correctness.smoke),
            (Stage.SHAPE_SWEEP, correctness.shape_sweep), (Stage.STABILITY, correctness.stability),
            (Stage.DETERMINISM, correctness.determinism), (Stage.EDGE, correctness.edge),
            (Stage.BACKWARD, correctness.backward), (Stage.SANITIZE, sanitize.run),
            (Stage.TIMING, performance.timing), (Stage.HOLDOUT, correctness.holdout)]


def run_pipeline(session, path: Path) -> Verdict:
    try:
        source = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise TaskError(f"cannot read candidate {path}: {exc}") from None
    ctx = EvalContext(session=session, path=path.resolve(), source=source, verdict=session.new_verdict(path, source))
    verdict = ctx.verdict
    try:
        _run_stages(ctx)
    finally:
        session.child_release = None
        if ctx.compile_ahead is not None:
            note = ctx.compile_ahead.close()
            if note:
                verdict.notes.append(note)
        if ctx.child is not None:
            ctx.child.close()
            # The candidate's own compiles (import, every Triton JIT specialisation), reported apart.
            verdict.compile_seconds = ctx.import_seconds + ctx.child.compile_seconds
            session.last_op_stats = dict(ctx.child.op_stats)
    verdict.correct = verdict.compiled and verdict.failed_stage is None and not verdict.violations \
        and verdict.status in (Status.FAILED, Status.PASSED)
    if verdict.correct and verdict.status is Status.FAILED and not verdict.error:
        verdict.status = Status.PASSED
    return verdict


def _run_stages(ctx: EvalContext) -> None:
    verdict = ctx.verdict
    resolved = ctx.session.resolved
    for stage, fn in _stage_table():
        if not resolved.wants(stage):
            continue
        if stage is Stage.TIMING and (verdict.failed_stage or verdict.violations):
            continue
        if ctx.session.on_stage is not None:
            ctx.session.on_stage(stage)
        started = time.perf_counter()
        try:
            result: StageResult | None = fn(ctx)
        except CandidateError as exc:
            # Whatever its exception is called: the harness's own failures never arrive as one
            # (a request the child could not read is a ChildFailure, below).
            result = StageResult(stage, False, error=str(exc))
            if stage is Stage.HOLDOUT:  # the holdout's failure, never the verdict's status
                _holdout_failed(verdict, result)
            elif ctx.session.resolved.interpret and looks_like_interpreter_gap(exc):
                verdict.status = Status.UNSUPPORTED_IN_INTERPRETER
                result.error = f"Triton interpreter cannot run this candidate: it calls " \
                               f"{describe_gap(exc.interpreter_gap)} ({exc})"
        except ChildFailure as exc:
            result = StageResult(stage, False, error=str(exc))
            if exc.reason == "timeout":
                verdict.status = Status.TIMEOUT
            elif exc.violation:  # the sandbox guard ended it, or something forged an answer
                ctx.violate(ViolationKind(exc.violation), f"{stage.value}: {exc}")
            elif exc.exitcode == 0:
                ctx.violate(ViolationKind.PROCESS_ESCAPE, f"{stage.value}: the candidate ended its own process")
            elif exc.reason == "harness":  # the child could not read the harness's request
                verdict.status = Status.HARNESS_ERROR
            if stage is Stage.HOLDOUT:
                _holdout_failed(verdict, result)
            elif exc.reason == "timeout":
                verdict.status = Status.TIMEOUT
        except TaskError as exc:
            result = StageResult(stage, False, error=str(exc))
            verdict.status = Status.HARNESS_ERROR
        except Exception as exc:  # a defect of the evaluator itself, never the candidate's fault
            log.debug("harness error", exc_info=True)
            result = StageResult(stage, False, error=f"evaluator error: {type(exc).__name__}: {exc}")
            verdict.status = Status.HARNESS_ERROR
            if ctx.session.options.debug:
                traceback.print_exc()
        if result is None:
            continue
        result.seconds = time.perf_counter() - started
        verdict.stages.append(result)
        if verdict.status is Status.HARNESS_ERROR:  # the evaluator's defect ends it, holdout included
            verdict.failed_stage, verdict.error = stage, result.error
            return
        if stage is Stage.HOLDOUT:
            continue
        if not result.passed:  # gated: the first failing stage ends the evaluation
            verdict.failed_stage = stage
            verdict.error = result.error or _first_failure(result) or _first_violation(verdict)
            return
        if verdict.status is Status.NEEDS_GPU:  # compile-checked; nothing more can run here
            return


def _holdout_failed(verdict: Verdict, result: StageResult) -> None:
    """The candidate raised, crashed or hung in the holdout stage outside the per-config checks that
    catch it (``correctness.holdout``): the holdout has failed, the seen verdict stands."""
    verdict.holdout.correct = False
    verdict.holdout.failed_configs.append(f"holdout stage: {result.error}")


def _first_failure(result: StageResult) -> str | None:
    for check in result.configs:
        if not check.passed:
            return f"{check.config} {check.dtype}: {check.note or 'mismatch'}"
    return None


def _first_violation(verdict: Verdict) -> str | None:
    return f"{verdict.violations[0].kind.value}: {verdict.violations[0].detail}" if verdict.violations else None


def looks_like_interpreter_gap(exc: CandidateError) -> bool:
    """A gap the harness recognised in the child from where the exception was raised
    (``sandbox.interpreter_gap``); the exception's text, which the candidate writes, plays no part."""
    return exc.interpreter_gap in GAP_NAMES
