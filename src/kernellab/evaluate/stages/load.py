"""Stage 1: import the candidate in a fresh child, instantiate it, make the first call.

The first call is where Triton JIT-compiles and ``load_inline`` builds; its time is reported as
``compile_seconds``, apart from evaluation time, because it is paid once per kernel, not per call.
Without a GPU, a CUDA C++ candidate can only be compile-checked (``nvcc``), and the verdict says so.
"""

from __future__ import annotations

import time

from kernellab.evaluate.checking import run_case
from kernellab.evaluate.compile_ahead import CompileAhead
from kernellab.evaluate.cuda_compile import compile_check
from kernellab.evaluate.verdict import Mode, Stage, StageResult, Status
from kernellab.sandbox.candidate import CandidateProcess, ChildSpec
from kernellab.sandbox.own_compiles import rename_sources
from kernellab.sandbox.requests import ImportRequest, ReleaseRequest
from kernellab.tasks.model import Visibility


def run(ctx) -> StageResult:
    session = ctx.session
    if ctx.scan is not None and ctx.scan.language == "cuda" and session.device == "cpu":
        return _compile_only(ctx)
    # The first case before the first child: in a cold process the fork server is still importing
    # torch and triton meanwhile (``EvalSession`` started it without waiting).
    case = session.case(first_config(session), session.resolved.dtypes[0], session.options.seed)
    child_dir = session.new_child_dir()
    spec = ChildSpec(device=session.device, interpret=session.resolved.interpret, env=session.child_env(child_dir),
                     log_path=child_dir / "candidate.log", memory_fraction=session.options.memory_fraction,
                     fp32_precision=session.task.fp32_precision)
    ctx.child = child = CandidateProcess(session.server(), spec)
    if child.unconfined:
        ctx.verdict.notes.append(f"the candidate's process could write outside its folder: {child.unconfined}")
    session.child_release = lambda: child.ask(ReleaseRequest(), 60)
    started = time.perf_counter()
    # Importing may build extensions (load_inline at module level): the compile budget, not a call's.
    ctx.child.ask(ImportRequest(str(ctx.path), ctx.is_own_reference), max(session.options.compile_timeout_s, ctx.timeout))
    ctx.import_seconds = time.perf_counter() - started
    run_case(ctx, case)  # judged again by the smoke stage; here it must only run
    ctx.verdict.compiled = True
    # After the first call: helpers starting beside it (six CUDA contexts and imports at once) slowed
    # the first compile and every check after it by about a second on the H100.
    ctx.compile_ahead = CompileAhead.start(ctx, spec, (case.problem.config, case.dtype))
    return StageResult(Stage.LOAD, True)


def first_config(session):
    """The small config, else the first seen config this device can run, else the first seen config
    (``machine_fit.require_fit`` refuses the evaluation before it starts)."""
    small = session.task.configs_of(Visibility.SMALL)
    if small:
        return small[0]
    seen = session.task.configs_of(Visibility.SEEN)
    return next((c for c in seen if session.fits_device(c)), seen[0])


def _compile_only(ctx) -> StageResult:
    verdict = ctx.verdict
    verdict.mode = Mode.COMPILE_ONLY
    # What the child on a GPU would build: its kernels renamed as its own (``own_compiles``).
    outcome = compile_check(rename_sources(ctx.scan.cpp_sources), ctx.session.work_dir)
    verdict.status = Status.NEEDS_GPU
    if outcome.ran:
        verdict.compiled = outcome.ok
        verdict.notes.append("CUDA C++ candidate on a machine without a GPU: compile-checked with nvcc only")
        return StageResult(Stage.LOAD, outcome.ok, error=outcome.error,
                           skipped=None if not outcome.ok else "no GPU: compile-checked only")
    verdict.notes.append(f"CUDA C++ candidate and no GPU: {outcome.error}")
    return StageResult(Stage.LOAD, False, error=outcome.error)
