"""Where the time goes: public profiling entry points of the evaluator.

* ``collect_profile(session, kernel)``: a few calls of one candidate in a fresh sandbox child of a
  warm ``EvalSession`` (kernels by GPU time; under the interpreter, which own kernels ran and which
  torch ops surrounded them). The agents' ``check --profile`` shows it.
* ``ncu_summary(session, kernel, task_path)``: Nsight Compute metrics of one call, where ``ncu`` exists.
* ``profile_call(fn, ...)``: one call of any callable (a whole model's forward, or forward + backward)
  under ``torch.profiler`` with shapes recorded, every device kernel attributed to the CPU op that
  launched it through the profiler's own correlation (never by kernel name), and every op to the
  innermost labelled range around it (``label(name)``), backward ops to the range of the forward op
  that created them (autograd sequence numbers). The model optimizer ranks what to speed up with it.

These live here, below ``agents`` and ``optimize``, so both use one implementation.
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

log = logging.getLogger(__name__)

TOP_KERNELS = 8  # kernels listed in a profile
DETAIL_CHARS = 300


def _clip(text: str) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= DETAIL_CHARS else text[:DETAIL_CHARS - 3] + "..."


def _table(headers: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(str(r[i])) for r in [headers, *rows]) for i in range(len(headers))]
    return ["  " + "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [headers, *rows]]


# ------------------------------------------------------------------------------------ one candidate


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
    from kernellab.sandbox.candidate import (
        CandidateError,
        CandidateProcess,
        ChildFailure,
        ChildSpec,
    )
    from kernellab.sandbox.requests import ImportRequest, InstantiateRequest, RunRequest
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
        child.ask(RunRequest(key, [{"inputs": case.inputs}]), slow)  # the first call compiles (JIT)
        case.restore_inputs()
        value = child.ask(RunRequest(key, [{"inputs": case.inputs}] * calls, profile=session.device == "cuda"),
                          timeout)
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



# ------------------------------------------------------------------------------------ one model call

LABEL_PREFIX = "kl:"  # record_function ranges opened by ``label``; ops are attributed to the innermost


def label(name: str):
    """A profiler range that ``profile_call`` attributes the ops inside it to (``with label(n): ...``)."""
    import torch

    return torch.profiler.record_function(LABEL_PREFIX + name)


@dataclass(frozen=True)
class OpTime:
    """Time of one CPU op (an aten op, a custom op) in one profiled call: on a GPU the kernels it
    launched (``self_us``, through the profiler's CPU-op -> kernel correlation), on the CPU its own
    CPU time. ``scope``: the innermost ``label`` around it (for backward ops: around the forward op
    whose autograd node ran it), or None."""

    name: str
    shapes: tuple
    self_us: float
    scope: str | None
    phase: str  # "forward" | "backward"


@dataclass
class CallProfile:
    """One or more calls of a callable, profiled. ``total_us``: all device kernel time in the window
    (GPU) or all ops' own CPU time (CPU), per call; ``attributed_us``: the part attributed to an op
    with a ``scope``. Coverage is their ratio."""

    device: str
    calls: int
    ops: list[OpTime] = field(default_factory=list)
    total_us: float = 0.0
    wall_us: float = 0.0
    unscoped_us: float = 0.0  # op time outside any label (the caller's glue)
    unattributed_us: float = 0.0  # kernel time no CPU op launched (GPU only)

    @property
    def attributed_us(self) -> float:
        return sum(o.self_us for o in self.ops if o.scope is not None)

    @property
    def coverage(self) -> float:
        return self.attributed_us / self.total_us if self.total_us > 0 else 0.0

    def by_scope(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for o in self.ops:
            if o.scope is not None:
                out[o.scope] = out.get(o.scope, 0.0) + o.self_us
        return out


def profile_call(fn, *, device: str, calls: int = 1, warmup: int = 1) -> CallProfile:
    """Run ``fn()`` ``warmup`` times, then ``calls`` times under ``torch.profiler`` (shapes recorded),
    and attribute the time per op and per ``label`` scope, per call (see ``OpTime``)."""
    import time

    import torch
    from torch.profiler import ProfilerActivity, profile

    cuda = device.startswith("cuda")
    for _ in range(warmup):
        fn()
    if cuda:
        torch.cuda.synchronize()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities, record_shapes=True) as prof:
        began = time.perf_counter()
        for _ in range(calls):
            fn()
        if cuda:
            torch.cuda.synchronize()
        wall = (time.perf_counter() - began) * 1e6
    return attribute(prof.events(), device=device, calls=calls, wall_us=wall)


def attribute(events, *, device: str, calls: int, wall_us: float) -> CallProfile:
    """The ``CallProfile`` of a profiler's ``FunctionEvent`` list (split out so it is testable on any trace)."""
    cuda = device.startswith("cuda")
    scope_of_seq: dict[int, str] = {}
    result = CallProfile(device=device, calls=calls, wall_us=wall_us / max(calls, 1))
    cpu_events = [e for e in events if _is_cpu(e)]
    for e in cpu_events:  # forward ops: the label around them; remember their autograd sequence numbers
        scope = _enclosing_label(e)
        seq = getattr(e, "sequence_nr", -1)
        if scope is not None and seq is not None and seq >= 0 and _backward_node(e) is None:
            scope_of_seq.setdefault(seq, scope)
    kernel_total = 0.0
    launched = 0.0
    for e in cpu_events:
        if e.name.startswith(LABEL_PREFIX):
            continue
        if not cuda and not _is_op(e.name):
            continue  # framework ranges (Dynamo's region, autograd's engine) are not ops
        own = _own_device_us(e) if cuda else float(e.self_cpu_time_total)
        if cuda:
            launched += own
        if own <= 0:
            continue
        node = _backward_node(e)
        if node is not None:
            phase, scope = "backward", scope_of_seq.get(getattr(node, "sequence_nr", -1))
        else:
            phase, scope = "forward", _enclosing_label(e)
        shapes = tuple(tuple(s) if isinstance(s, list) else s for s in (e.input_shapes or ()))
        result.ops.append(OpTime(e.name, shapes, own / max(calls, 1), scope, phase))
    if cuda:
        # Device kernels only: a labelled range also appears on the device's timeline (a user annotation
        # spanning its kernels), which counted every labelled kernel twice (an H200 profile of a Llama
        # decoder read 42.9 ms of kernels for a 19.5 ms step, half of it "unattributed").
        kernel_total = sum(float(getattr(e, "device_time_total", 0.0)) for e in events
                           if not _is_cpu(e) and not getattr(e, "is_user_annotation", False))
        result.total_us = kernel_total / max(calls, 1)
        result.unattributed_us = max(kernel_total - launched, 0.0) / max(calls, 1)
    else:  # CPU: the time spent in ops (the Python between them is the caller's, reported as wall_us)
        result.total_us = sum(o.self_us for o in result.ops)
    result.unscoped_us = sum(o.self_us for o in result.ops if o.scope is None)
    result.ops = _merge(result.ops)
    return result


def _is_op(name: str) -> bool:
    """An operator (``aten::mm``, a custom op ``ns::name``), not a framework range."""
    return "::" in name and not name.startswith(("autograd::", "Torch", "torch::", "cuda", "Optimizer"))


def _is_cpu(e) -> bool:
    from torch.autograd import DeviceType

    return getattr(e, "device_type", DeviceType.CPU) == DeviceType.CPU


def _own_device_us(e) -> float:
    """Device time of the kernels this CPU op itself launched (its children's are theirs)."""
    return float(sum(k.duration for k in getattr(e, "kernels", []) or []))


def _enclosing_label(e) -> str | None:
    parent = e
    while parent is not None:
        if parent.name.startswith(LABEL_PREFIX):
            return parent.name[len(LABEL_PREFIX):]
        parent = parent.cpu_parent
    return None


def _backward_node(e):
    parent = e
    while parent is not None:
        if parent.name.startswith("autograd::engine::evaluate_function"):
            return parent
        parent = parent.cpu_parent
    return None


def _merge(ops: list[OpTime]) -> list[OpTime]:
    """One record per (name, shapes, scope, phase), times summed, largest first."""
    merged: dict[tuple, OpTime] = {}
    for o in ops:
        key = (o.name, o.shapes, o.scope, o.phase)
        prev = merged.get(key)
        merged[key] = o if prev is None else OpTime(o.name, o.shapes, prev.self_us + o.self_us, o.scope, o.phase)
    return sorted(merged.values(), key=lambda o: -o.self_us)
