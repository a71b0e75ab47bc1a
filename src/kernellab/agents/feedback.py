"""Compact feedback on a check: what an agent reads after ``check``, as plain text.

It says the failing stage and its first errors, the violations, per-config timings with speedups
against eager, torch.compile and the baseline kernel and the share of the roofline reached, and,
when asked, where the time goes (a profile of a few calls, and Nsight Compute where it is installed).
Holdout results are never part of it: the verdict it formats comes from seen configs only, and the
holdout field is dropped from every document it produces.
"""

from __future__ import annotations

import csv
import json
import logging
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernellab.evaluate.verdict import Stage, Verdict, VerdictSummary

log = logging.getLogger(__name__)

MAX_ERRORS = 5  # failing config checks and violations listed; the rest are counted
DETAIL_CHARS = 300  # one error or violation line at most this long
TOP_KERNELS = 8  # kernels listed in a profile


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


# ------------------------------------------------------------------------------------ profile


@dataclass
class KernelTime:
    name: str
    calls: int
    total_us: float


@dataclass
class ProfileSummary:
    """Where the time of a few calls goes: kernels by GPU time, or under the interpreter, which of
    the candidate's Triton kernels ran and which torch ops it issued around them."""

    config: str
    dtype: str
    calls: int
    kernels: list[KernelTime] = field(default_factory=list)
    own_kernels_ran: list[str] | None = None
    torch_ops: list[tuple[str, int]] = field(default_factory=list)
    error: str | None = None

    def lines(self) -> list[str]:
        head = f"profile ({self.config} {self.dtype}, {self.calls} calls)"
        if self.error:
            return [f"{head}: not available: {_clip(self.error)}"]
        out = [f"{head}:"]
        if self.kernels:
            total = sum(k.total_us for k in self.kernels) or 1.0
            for k in self.kernels[:TOP_KERNELS]:
                out.append(f"  {100 * k.total_us / total:5.1f}%  {k.total_us / max(self.calls, 1):9.1f} us/call  "
                           f"{k.calls:3d} launches  {_clip(k.name)[:100]}")
            if len(self.kernels) > TOP_KERNELS:
                out.append(f"  ... and {len(self.kernels) - TOP_KERNELS} more kernels")
        elif self.own_kernels_ran is not None:
            out.append("  no GPU: the interpreter ran your Triton kernels "
                       + (", ".join(self.own_kernels_ran) or "(none)"))
        else:
            out.append("  no GPU kernels were recorded")
        if self.torch_ops:
            out.append("  torch ops outside your kernels: "
                       + ", ".join(f"{name} x{n}" for name, n in self.torch_ops[:TOP_KERNELS]))
        return out


def collect_profile(session, kernel: Path, calls: int = 3) -> ProfileSummary:
    """Run ``kernel`` a few times in a fresh sandbox child of ``session`` and summarise what ran.

    On a GPU: the kernels of a profiler trace, by total time. Under the interpreter: the candidate's
    Triton kernels that ran and the torch ops it issued outside them (what ``strict`` looks at).
    """
    from kernellab.evaluate.reference import PARAM_SEED
    from kernellab.evaluate.stages.load import first_config
    from kernellab.sandbox.requests import ImportRequest, InstantiateRequest, RunRequest
    from kernellab.sandbox.candidate import (
        CandidateError,
        CandidateProcess,
        ChildFailure,
        ChildSpec,
    )
    from kernellab.tasks.model import Visibility

    seen = [c for c in session.task.configs_of(Visibility.SEEN) if session.fits_device(c)]
    config = seen[0] if session.device == "cuda" and seen else first_config(session)
    dtype = session.resolved.dtypes[0]
    summary = ProfileSummary(config=config.label, dtype=dtype, calls=calls)
    child_dir = session.new_child_dir()
    spec = ChildSpec(device=session.device, interpret=session.resolved.interpret, env=session.child_env(child_dir),
                     log_path=child_dir / "profile.log", memory_fraction=session.options.memory_fraction,
                     fp32_precision=session.task.fp32_precision)
    timeout = session.options.request_timeout_s
    slow = max(session.options.compile_timeout_s, timeout)
    child = None
    try:
        child = CandidateProcess(session.server(), spec)
        child.ask(ImportRequest(str(kernel)), slow)
        case = session.case(config, dtype, session.options.seed, probe=False)
        key = f"{config.label}|{dtype}"
        child.ask(InstantiateRequest(key, case.init_inputs, PARAM_SEED, case.state, dtype,
                                     list(session.task.keep_dtype)), slow)
        case.restore_inputs()
        child.ask(RunRequest(key, [{"inputs": case.inputs}]), slow)  # JIT
        case.restore_inputs()
        value = child.ask(RunRequest(key, [{"inputs": case.inputs}] * calls, profile=session.device == "cuda"), timeout)
    except (CandidateError, ChildFailure) as exc:
        summary.error = str(exc)
        return summary
    finally:
        if child is not None:
            child.close()
    trace = value.get("trace") or []
    by_name: dict[str, KernelTime] = {}
    for record in trace[1:]:  # the first record is the harness's launch-stream marker
        k = by_name.setdefault(record["name"], KernelTime(record["name"], 0, 0.0))
        k.calls += 1
        k.total_us += float(record["duration_us"])
    summary.kernels = sorted(by_name.values(), key=lambda k: -k.total_us)
    if value.get("interpreted_kernels") is not None:
        summary.own_kernels_ran = list(value["interpreted_kernels"])
    if value.get("ops"):
        summary.torch_ops = Counter(value["ops"]).most_common()
    return summary


# ------------------------------------------------------------------------------------ Nsight Compute

NCU_METRICS = ("gpu__time_duration.sum", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
               "sm__throughput.avg.pct_of_peak_sustained_elapsed",
               "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread")
_NCU_RANGE = "kernellab_candidate"
# Runs the candidate once to warm up, then once inside an NVTX range that ncu is told to profile.
_NCU_RUNNER = """
import importlib.util, json, sys
import torch
from kernellab.tasks.load import load_task
from kernellab.tasks.materialize import build_model, cast_model, load_problem
from kernellab.tasks.model import Config, Visibility
spec = json.loads(sys.argv[1])
task = load_task(spec["task"])
problem = load_problem(task, Config.of(spec["config"], Visibility.SEEN))
module_spec = importlib.util.spec_from_file_location("kernellab_candidate", spec["kernel"])
module = importlib.util.module_from_spec(module_spec)
module_spec.loader.exec_module(module)
model = cast_model(build_model(module.ModelNew, problem.init_inputs(), 1234), spec["dtype"], list(task.keep_dtype), "cuda")
inputs = problem.inputs(spec["seed"], "cuda", spec["dtype"])
with torch.no_grad():
    model(*inputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_push(spec["range"])
    model(*inputs)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
"""


def ncu_summary(session, kernel: Path, task_path: Path, timeout_s: float = 300.0) -> str | None:
    """Nsight Compute metrics of one call of ``kernel`` on the first seen config, where ``ncu`` is
    installed and a GPU is present (``None`` otherwise). ``task_path`` is a loadable copy of the task."""
    ncu = shutil.which("ncu")
    if ncu is None or session.device != "cuda":
        return None
    from kernellab.tasks.model import Visibility

    seen = session.task.configs_of(Visibility.SEEN)
    if not seen:
        return None
    config, dtype = seen[0], session.resolved.dtypes[0]
    child_dir = session.new_child_dir()
    env = session.child_env(child_dir)
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[2])
    spec = {"task": str(task_path), "config": config.as_dict(), "dtype": dtype, "kernel": str(kernel),
            "seed": session.options.seed, "range": _NCU_RANGE}
    command = [ncu, "--csv", "--nvtx", "--nvtx-include", f"{_NCU_RANGE}/", "--metrics", ",".join(NCU_METRICS),
               "--launch-count", "20", sys.executable, "-c", _NCU_RUNNER, json.dumps(spec)]
    try:
        proc = subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout_s, env=env, cwd=child_dir,
                              start_new_session=True)
    except subprocess.TimeoutExpired:
        return f"ncu ({config.label} {dtype}): no result within {timeout_s:.0f} s"
    except OSError as exc:
        return f"ncu: cannot run: {exc}"
    return _ncu_text(proc, f"{config.label} {dtype}")


def _ncu_text(proc: subprocess.CompletedProcess, where: str) -> str:
    rows = [line for line in proc.stdout.splitlines() if line.startswith('"')]
    if proc.returncode != 0 or len(rows) < 2:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
        return f"ncu ({where}): no metrics ({_clip(tail[0])})"
    table = list(csv.DictReader(rows))
    kernels: dict[str, dict[str, str]] = {}
    for row in table:
        name = row.get("Kernel Name", "?")
        kernels.setdefault(f"{row.get('ID', '?')} {name}", {})[row.get("Metric Name", "")] = row.get("Metric Value", "")
    short = {"gpu__time_duration.sum": "time", "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram %",
             "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm %",
             "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy %",
             "launch__registers_per_thread": "regs"}
    headers = ["kernel", *short.values()]
    body = [[_clip(k.split(" ", 1)[1])[:60], *(m.get(metric, "-") for metric in short)] for k, m in kernels.items()]
    return "\n".join([f"ncu ({where}, one call; time in the unit ncu reports):"] + _table(headers, body[:TOP_KERNELS]))

