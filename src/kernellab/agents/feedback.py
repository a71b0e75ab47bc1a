"""Compact feedback on a check: what an agent reads after ``check``, as plain text.

It says the failing stage and its first errors, the violations, per-config timings with speedups
against eager, torch.compile and the baseline kernel and the share of the roofline reached, and,
when asked, where the time goes (``evaluate.profiling``: a profile of a few calls, and Nsight Compute
where it is installed).
Holdout results are never part of it: the verdict it formats comes from seen configs only, and the
holdout field is dropped from every document it produces.
"""

from __future__ import annotations

import logging
from typing import Any

from kernellab.evaluate.profiling import (  # noqa: F401 - the profile and ncu summary live in evaluate
    NCU_METRICS,
    KernelTime,
    ProfileSummary,
    _ncu_text,
    collect_profile,
    ncu_summary,
)
from kernellab.evaluate.verdict import Stage, Verdict, VerdictSummary

log = logging.getLogger(__name__)

MAX_ERRORS = 5  # failing config checks and violations listed; the rest are counted
DETAIL_CHARS = 300  # one error or violation line at most this long


# ------------------------------------------------------------------------------------ documents


def public_verdict(verdict: Verdict, kernel_name: str = "kernel.py") -> dict[str, Any]:
    """The verdict as a document an agent may see: no holdout field, the kernel named as in its workspace."""
    document = verdict.to_dict()
    document.pop("holdout", None)
    document["stages"] = [s for s in document["stages"] if s["name"] != Stage.HOLDOUT.value]
    document["candidate"] = {**document["candidate"], "path": kernel_name}
    return document


def verdict_summary(verdict: Verdict) -> dict[str, Any]:
    """A short record of a verdict (for check logs and trajectories)."""
    return VerdictSummary.of(verdict, _clip).to_dict()


# ------------------------------------------------------------------------------------ text


def format_feedback(verdict: Verdict, *, task_id: str, profile: ProfileSummary | None = None,
                    ncu: str | None = None) -> str:
    lines = [_headline(verdict, task_id)]
    if verdict.error:
        lines.append(f"error: {_clip(verdict.error)}")
    lines.append("stages: " + ", ".join(_stage_word(s) for s in verdict.stages if s.name is not Stage.HOLDOUT))
    lines += [f"  {s.name.value}: {s.skipped}" for s in verdict.stages
              if s.skipped and s.name not in (Stage.HOLDOUT, Stage.TIMING)]  # the timings line says why
    failing = [c for s in verdict.stages if s.name is not Stage.HOLDOUT for c in s.configs if not c.passed]
    if failing:
        lines.append("failing checks:")
        lines += [f"  {_check_line(c)}" for c in failing[:MAX_ERRORS]]
        if len(failing) > MAX_ERRORS:
            lines.append(f"  ... and {len(failing) - MAX_ERRORS} more")
    if verdict.violations:
        lines.append("violations:")
        lines += [f"  {v.kind.value}: {_clip(v.detail)}" for v in verdict.violations[:MAX_ERRORS]]
        if len(verdict.violations) > MAX_ERRORS:
            lines.append(f"  ... and {len(verdict.violations) - MAX_ERRORS} more")
    lines += _timing_lines(verdict)
    if profile is not None:
        lines += profile.lines()
    if ncu:
        lines.append(ncu.rstrip())
    lines += [f"note: {n}" for n in verdict.notes]
    lines.append("Held-out configurations are not checked here; the final score runs them as well.")
    return "\n".join(lines) + "\n"


def _headline(verdict: Verdict, task_id: str) -> str:
    where = f"{verdict.mode.value} on {verdict.device}"
    if verdict.status.value == "passed":
        state = "PASSED"
    elif verdict.failed_stage is not None:
        state = f"{verdict.status.value.upper()} at {verdict.failed_stage.value}"
    else:
        state = verdict.status.value.upper()
    compile_s = f", compile {verdict.compile_seconds:.1f} s" if (verdict.compile_seconds or 0) >= 0.05 else ""
    return f"check {task_id}: {state} ({where}; {verdict.elapsed_s:.1f} s{compile_s})"


def _stage_word(stage) -> str:
    if not stage.passed:
        return f"{stage.name.value} FAILED"
    if stage.skipped:
        return f"{stage.name.value} " + ("ok (some configs skipped)" if stage.configs else "skipped")
    return f"{stage.name.value} ok"


def _check_line(check) -> str:
    parts = [f"{check.config} {check.dtype}"]
    if check.max_abs_err is not None:
        parts.append(f"max abs err {check.max_abs_err:.3g}")
    if check.max_rel_err is not None:
        parts.append(f"max rel err {check.max_rel_err:.3g}")
    if check.tolerance is not None:
        parts.append(f"tolerance {check.tolerance:.3g}")
    if check.note:
        parts.append(_clip(check.note))
    return "; ".join(parts)


def _timing_lines(verdict: Verdict) -> list[str]:
    if not verdict.timings:
        if verdict.mode.value == "interpret":
            return [("timings: none. There is no GPU here: the Triton interpreter checks correctness only, "
                     "so nothing is timed.")]
        if verdict.correct:
            return ["timings: none"]
        return ["timings: none (only a correct kernel is timed)"]
    headers = ["config", "dtype", "phase", "us", "eager", "compile", "baseline", "x eager", "x compile",
               "x baseline", "% roofline"]
    rows = [[t.config, t.dtype, t.phase, _num(t.candidate_us, 1), _num(t.eager_us, 1), _num(t.compile_us, 1),
             _num(t.baseline_us, 1), _num(t.speedup_vs_eager, 2), _num(t.speedup_vs_compile, 2),
             _num(t.speedup_vs_baseline, 2), _num(t.pct_of_roofline, 1)] for t in verdict.timings]
    lines = ["timings (median us per call; x = speedup, above 1 is faster):"] + _table(headers, rows)
    s = verdict.speedup
    lines.append(f"speedup (geometric mean over seen configs x dtypes): x{_num(s.get('vs_eager'), 2)} vs eager, "
                 f"x{_num(s.get('vs_compile'), 2)} vs torch.compile, x{_num(s.get('vs_baseline'), 2)} vs baseline")
    return lines


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    return ["  " + "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [headers, *rows]]


def _num(x: float | None, digits: int) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _clip(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS - 3] + "..."
