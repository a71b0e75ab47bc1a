"""Stage 0: the static scan of the candidate's Python and C++ source (rules in ``static_scan``)."""

from __future__ import annotations

from kernellab.evaluate.static_scan import scan_candidate
from kernellab.evaluate.verdict import Stage, StageResult


def run(ctx) -> StageResult:
    ctx.scan = scan_candidate(ctx.source, str(ctx.path), ctx.policy)
    if ctx.scan.syntax_error:
        return StageResult(Stage.STATIC, False, error=f"syntax error: {ctx.scan.syntax_error}")
    for violation in ctx.scan.violations:
        ctx.violate(violation.kind, violation.detail)
    passed = not ctx.scan.violations
    return StageResult(Stage.STATIC, passed,
                       error=None if passed else f"{ctx.scan.violations[0].kind.value}: {ctx.scan.violations[0].detail}")
