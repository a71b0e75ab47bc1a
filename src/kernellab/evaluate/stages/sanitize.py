"""Stage `sanitize`: compute-sanitizer memcheck, racecheck and initcheck on the small and edge configs.

Output checks cannot see a kernel that is right by luck: a store past the end of its output (the
bytes after it belong to nobody, or to another tensor), scratch from ``torch.empty`` read as if it
were zero (the caching allocator hands back blocks an earlier kernel zeroed), a shared-memory race
that the scheduler happens to win. compute-sanitizer sees each of them on any input that reaches
the code: memcheck (out-of-bounds and misaligned accesses, ``memory_safety``), initcheck (reads of
global memory nobody wrote, ``memory_safety``) and racecheck (shared-memory hazards, ``race``).

The tools run in processes of their own, each a fresh interpreter that imports the candidate and
calls it, forward and (for backward tasks) backward, on every small and edge config in every
evaluated dtype, on inputs it draws itself (``sandbox.sanitizer``): only the tool's report is
evidence. The stage runs after the correctness stages have passed and before timing; on a machine
without a GPU, or without the tool, it is skipped with the reason.

What it cannot see: races in global memory between programs (split-K partial sums stored without
atomics, two programs writing one output tile). No compute-sanitizer tool checks those (racecheck
is shared memory only). The determinism stage (identical inputs, bitwise identical outputs) and the
repeated trials of the shape sweep catch the ones that change results from run to run.
"""

from __future__ import annotations

import logging

from kernellab.evaluate.verdict import Stage, StageResult, ViolationKind
from kernellab.sandbox.sanitizer import TOOLS, SanitizeJob, ToolRun, run_sanitizers
from kernellab.tasks.materialize import reference_file
from kernellab.tasks.model import Visibility

log = logging.getLogger(__name__)

KINDS = {"memory_safety": ViolationKind.MEMORY_SAFETY, "race": ViolationKind.RACE}
SANITIZED = (Visibility.SMALL, Visibility.EDGE)


def items(task, dtypes: tuple[str, ...], size=None) -> list[dict]:
    """Every small and edge config × dtype, forward; for backward tasks also forward+backward (a
    candidate may take another path when its inputs require grad). ``size`` (config -> elements)
    orders the configs smallest first: a tool stopped at its time limit has then checked the most
    calls it could (racecheck on a 1×4096×4096 matmul takes tens of seconds)."""
    configs = [c for visibility in SANITIZED for c in task.configs_of(visibility)]
    if size is not None:
        configs.sort(key=size)  # stable: small configs keep their place before edge ones of equal size
    out = []
    for config in configs:
        for dtype in dtypes:
            base = {"label": config.label, "values": config.as_dict(), "dtype": dtype,
                    "keep_dtype": list(task.keep_dtype), "grad_inputs": None}
            out.append(base)
            if task.backward:
                out.append(dict(base, grad_inputs=list(task.grad_inputs)))
    return out


def run(ctx) -> StageResult:
    session = ctx.session
    if session.device != "cuda":
        return StageResult(Stage.SANITIZE, True, skipped="no GPU: compute-sanitizer checks kernels as they run on one")
    if ctx.verdict.violations:
        return StageResult(Stage.SANITIZE, True, skipped="not run: the candidate already has violations")
    task = session.task
    calls = items(task, session.resolved.dtypes, size=lambda config: session.problem(config).input_numel())
    if not calls:
        return StageResult(Stage.SANITIZE, True, skipped="the task has no small or edge configs")
    if ctx.child is not None:
        # The checking child's environment: its Triton cache and extension builds hold the kernels
        # the checks compiled, so the tools load them instead of compiling under instrumentation.
        env, folder = dict(ctx.child.spec.env), ctx.child.spec.log_path.parent / "sanitize"
    else:
        child_dir = session.new_child_dir()
        env, folder = session.child_env(child_dir), child_dir / "sanitize"
    job = SanitizeJob(candidate=ctx.path, source=task.source, where=str(reference_file(task)), items=calls,
                      seed=session.options.seed, fp32_precision=task.fp32_precision,
                      reference_class=ctx.is_own_reference)
    runs = run_sanitizers(job, env, folder, session.options.sanitize_timeout_s)
    return judge(ctx, runs, len(calls))


def judge(ctx, runs: list[ToolRun], calls: int) -> StageResult:
    """The stage's result from the tools' runs: findings are violations, the candidate's own failure
    fails the stage, a tool that could not check (absent, unsupported device, time limit) is a note."""
    result = StageResult(Stage.SANITIZE, True)
    unchecked, failures = [], []
    for tool_run in runs:
        outcome = tool_run.outcome
        log.info("sanitize %s: %s in %.1f s %s", tool_run.tool, outcome, tool_run.seconds, tool_run.phases())
        if outcome == "findings":
            for finding in tool_run.report.findings:
                ctx.violate(KINDS[finding.kind], finding.line())
        elif outcome == "candidate_failure":
            failures.append(tool_run.describe())
        elif outcome in ("tool_failure", "timeout"):
            unchecked.append(tool_run.describe())
        for warning in tool_run.report.warnings:
            _note(ctx, f"racecheck warning (a possible hazard, not counted): {warning.line()}")
        ready = tool_run.mark("ready") or {}
        if ready.get("cached") and tool_run.tool in ("initcheck", "memcheck"):
            _note(ctx, f"{tool_run.tool} ran with torch's caching allocator on (PYTORCH_NO_CUDA_MEMORY_CACHING had no "
                       f"effect): reused blocks look initialised and in bounds")
    own = [v for v in ctx.verdict.violations if v.kind in KINDS.values()]
    result.passed = not own and not failures
    result.error = (f"{own[0].kind.value}: {own[0].detail}" if own else failures[0] if failures else None)
    for line in unchecked:
        _note(ctx, line)
    slowest = max((r.seconds for r in runs), default=0.0)
    done = [r.tool for r in runs if r.outcome == "clean"]
    if unchecked:
        missing = [r.tool for r in runs if r.outcome in ("tool_failure", "timeout")]
        result.skipped = f"not checked by {', '.join(missing)}: {unchecked[0]}"
    elif result.passed:
        _note(ctx, f"compute-sanitizer {', '.join(done or TOOLS)}: {calls} calls on small and edge configs, clean "
                   f"({slowest:.1f} s, the tools in parallel)")
    return result


def _note(ctx, line: str) -> None:
    if line not in ctx.verdict.notes:
        ctx.verdict.notes.append(line)
