"""compute-sanitizer around a candidate: memcheck, racecheck and initcheck, each in a process of its own.

The tool must wrap a whole process from its start, so each tool runs a fresh interpreter
(``sanitize_target``) that imports the candidate and calls it on the configs it is given. The three
run in parallel: each is dominated by its own start (the interpreter, torch, a CUDA context under
the tool, loading and instrumenting kernels), not by the calls, so together they take about as long
as the slowest.

Each process gets what a candidate child gets and nothing more: the environment the judge hands its
children (``env``: the child's own, with its Triton cache and extension folders, so kernels the
checks compiled are loaded, not compiled again under the tool), its own folder as HOME and TMPDIR,
its own process group (killed whole at the time limit), stdin from /dev/null, and its output in a
log. ``PYTORCH_NO_CUDA_MEMORY_CACHING=1`` turns torch's caching allocator off, so each
``torch.empty`` is a fresh ``cudaMalloc``: initcheck then sees scratch memory nobody wrote (the
allocator would hand back blocks that earlier tensors wrote), and memcheck sees a store past the
end of an output as outside its allocation (inside a cached 2 MiB segment it is not).

What decides is the tool's report, written to a log file the candidate's process is not told about,
never anything the candidate's process says: its progress marks only tell the tool's failure to
start (no ``ready`` mark) from the candidate's own failure and say where the seconds went.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernellab.sandbox.forkserver import with_this_kernellab
from kernellab.sandbox.sanitizer_report import Report, parse

TOOLS = ("memcheck", "racecheck", "initcheck")
# memcheck: a padding buffer after every allocation, so a store a few KiB past the end of an output
# lands in the padding instead of inside the next allocation (where it would be a valid address).
PADDING_BYTES = 1 << 16
_COMMON = ("--report-api-errors", "no",  # torch and Triton probe the driver with calls that may fail
           "--check-exit-code", "no",  # the target's own marks say how it ended
           "--print-limit", "200", "--show-backtrace", "no")
_TOOL_OPTIONS = {"memcheck": ("--padding", str(PADDING_BYTES)), "racecheck": (), "initcheck": ()}
OVERRIDE = "KERNELLAB_COMPUTE_SANITIZER"  # a path to the tool, or "none" (taken as absent)


def find_sanitizer() -> str | None:
    """The compute-sanitizer executable: ``$KERNELLAB_COMPUTE_SANITIZER``, the PATH, then the CUDA
    toolkit's usual places."""
    override = os.environ.get(OVERRIDE)
    if override:
        return override if override != "none" and os.access(override, os.X_OK) else None
    found = shutil.which("compute-sanitizer")
    if found:
        return found
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]
    roots += sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    for root in roots:
        if root and os.access(os.path.join(root, "bin", "compute-sanitizer"), os.X_OK):
            return os.path.join(root, "bin", "compute-sanitizer")
    return None


@dataclass
class SanitizeJob:
    """What the sanitized process calls: ``items`` as ``sanitize_target`` describes them."""

    candidate: Path
    source: str  # the task's reference module
    where: str  # its file, named in tracebacks
    items: list[dict[str, Any]]
    seed: int = 0
    fp32_precision: str = "ieee"
    fast_exit: bool = False  # leave with os._exit once done (no teardown of torch and the CUDA context)
    reference_class: bool = False  # the file is the task's reference, evaluated as its own candidate


@dataclass
class ToolRun:
    """One tool's run over the job: its parsed report, the target's marks and how it ended."""

    tool: str
    report: Report
    exitcode: int | None  # the tool's exit status; None when it was killed at the time limit
    marks: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    started: float = 0.0  # time.time() when the tool was launched
    timed_out: bool = False
    log: Path | None = None  # the tool's report
    candidate_log: Path | None = None
    calls: int = 0  # the job's items

    @property
    def checked(self) -> int:
        """The items whose calls finished under the tool."""
        return sum(1 for m in self.marks if m.get("phase") == "item")

    def mark(self, phase: str) -> dict[str, Any] | None:
        return next((m for m in self.marks if m.get("phase") == phase), None)

    @property
    def outcome(self) -> str:
        """``findings`` (errors in the report: the candidate's), ``candidate_failure`` (its code raised,
        or its process ended before its calls were done, with no error to explain it), ``timeout``,
        ``tool_failure`` (the tool, or the harness under it, never got to check the candidate: a note,
        never the candidate's failure) or ``clean``."""
        if self.report.findings:
            return "findings"
        if self.timed_out:
            return "timeout"
        if self.report.tool_failure or self.mark("ready") is None:
            return "tool_failure"
        raised = self.mark("raised")
        if raised is not None:
            # the harness's own input building (the reference's get_inputs) is not the candidate's code
            return "tool_failure" if raised.get("where") == "inputs" else "candidate_failure"
        if self.mark("done") is None:
            return "candidate_failure"
        if self.report.summary_errors is None:
            return "tool_failure"
        return "clean"

    def describe(self) -> str:
        """One line for the verdict: why this run found nothing about the candidate, or what it did."""
        outcome = self.outcome
        if outcome == "tool_failure":
            setup = self.mark("setup_failed") or self.mark("raised")
            why = self.report.tool_failure or (setup or {}).get("error") or (
                f"the sanitized process never started (tool exit status {self.exitcode})"
                if self.mark("ready") is None else "the tool wrote no summary")
            return f"compute-sanitizer {self.tool} could not check the candidate: {why}"
        if outcome == "timeout":
            return (f"compute-sanitizer {self.tool} did not finish within {self.seconds:.0f} s: {self.checked} of "
                    f"{self.calls} calls checked, smallest configs first (the rest not sanitized)")
        if outcome == "candidate_failure":
            raised = self.mark("raised")
            if raised is not None:
                where = raised.get("label") or "import"
                return f"under compute-sanitizer {self.tool} the candidate raised on {where}: {raised.get('error')}"
            status = f"status {self.exitcode}" if self.exitcode is not None and self.exitcode >= 0 \
                else f"signal {-(self.exitcode or 0)}"
            return (f"under compute-sanitizer {self.tool} the candidate's process ended ({status}) before its calls "
                    f"were done")
        if outcome == "findings":
            return "; ".join(f.line() for f in self.report.findings)
        return f"compute-sanitizer {self.tool}: clean"

    def phases(self) -> dict[str, float]:
        """Seconds from the tool's launch to each mark of the target (where the time goes): ``started``
        (the interpreter is up, under the tool), ``torch`` (imported), ``ready`` (a CUDA context),
        ``imported`` (the candidate), ``done`` (every call made), ``total`` (the tool exited)."""
        out: dict[str, float] = {}
        for m in self.marks:
            if m["phase"] != "item":
                out.setdefault(m["phase"], round(m["t"] - self.started, 3))
        out["total"] = round(self.seconds, 3)
        return out


def target_env(env: dict[str, str], folder: Path) -> dict[str, str]:
    """The sanitized process's environment: the child's, its own folder, no caching allocator."""
    out = dict(env, HOME=str(folder), TMPDIR=str(folder), PYTORCH_NO_CUDA_MEMORY_CACHING="1",
               PYTHONDONTWRITEBYTECODE="1")
    return with_this_kernellab(out)


def run_sanitizers(job: SanitizeJob, env: dict[str, str], folder: Path, timeout_s: float,
                   tools: tuple[str, ...] = TOOLS, executable: str | None = None) -> list[ToolRun]:
    """Run each tool over ``job`` in parallel processes; one ``ToolRun`` per tool, in ``tools``' order.
    ``executable``: the tool (``find_sanitizer()`` when None); absent, every run is a tool failure."""
    executable = executable or find_sanitizer()
    folder.mkdir(parents=True, exist_ok=True)
    if executable is None:
        missing = f"compute-sanitizer not found (PATH, CUDA_HOME, /usr/local/cuda; or set {OVERRIDE})"
        return [ToolRun(tool, Report(tool, tool_failure=missing), None) for tool in tools]
    started: dict[str, tuple[subprocess.Popen, float, Any]] = {}
    runs: dict[str, ToolRun] = {}
    for tool in tools:
        own = folder / tool
        own.mkdir(exist_ok=True)
        spec = {"candidate": str(job.candidate), "source": job.source, "where": job.where, "items": job.items,
                "seed": job.seed, "fp32_precision": job.fp32_precision, "fast_exit": job.fast_exit,
                "reference_class": job.reference_class, "judge_pid": os.getpid(),
                "status_path": str(own / "marks.jsonl"), "log_path": str(own / "candidate.log")}
        (own / "job.json").write_text(json.dumps(spec))
        command = [executable, "--tool", tool, *_COMMON, *_TOOL_OPTIONS[tool], "--log-file", str(own / "report.txt"),
                   sys.executable, "-m", "kernellab.sandbox.sanitize_target", str(own / "job.json")]
        out = open(own / "tool.out", "wb")
        try:
            proc = subprocess.Popen(command, env=target_env(env, own), cwd=own, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        except OSError as exc:
            out.close()
            runs[tool] = ToolRun(tool, Report(tool, tool_failure=f"cannot start {executable}: {exc}"), None)
            continue
        started[tool] = (proc, time.time(), out)
    deadline = time.monotonic() + timeout_s
    ended: dict[str, float] = {}
    while len(ended) < len(started) and time.monotonic() < deadline:
        for tool, (proc, _, _) in started.items():
            if tool not in ended and proc.poll() is not None:
                ended[tool] = time.time()
        time.sleep(0.02)
    for tool, (proc, t0, out) in started.items():
        timed_out = tool not in ended
        _kill_group(proc)  # at the time limit; or whatever the target left behind in its group
        out.close()
        runs[tool] = _collect(tool, folder / tool, None if timed_out else proc.returncode, t0,
                              ended.get(tool, time.time()), timed_out)
    for run in runs.values():
        run.calls = len(job.items)
    return [runs[tool] for tool in tools]


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def _collect(tool: str, own: Path, exitcode: int | None, t0: float, t1: float, timed_out: bool) -> ToolRun:
    report = parse(tool, _read(own / "report.txt"))
    if report.tool_failure is None and report.summary_errors is None:
        # A tool that could not start often says why on its own stdout, not in the log file.
        report.tool_failure = parse(tool, _read(own / "tool.out")).tool_failure
    marks = []
    for line in _read(own / "marks.jsonl").splitlines():
        try:
            mark = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(mark, dict) and isinstance(mark.get("t"), (int, float)) and isinstance(mark.get("phase"), str):
            marks.append(mark)
    return ToolRun(tool, report, exitcode, marks, seconds=t1 - t0, started=t0, timed_out=timed_out,
                   log=own / "report.txt", candidate_log=own / "candidate.log")


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
