"""``kernellab eval``: one verdict for one candidate against one task."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from kernellab.cli.early_start import leave
from kernellab.cli.errors import UsageError, report_usage_error
from kernellab.cli.options import Debug, Device, Json
from kernellab.evaluate.compile_ahead import CORES_PER_HELPER, MAX_HELPERS
from kernellab.evaluate.machine_fit import require_fit
from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage, Verdict
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Policy, TaskError


def eval_command(
    task: str = typer.Option(..., "--task", help="suite id (e.g. normalization/rmsnorm), task folder or .py file"),
    candidate: Path = typer.Option(..., "--candidate", help="Python file defining class ModelNew"),
    policy: Optional[Policy] = typer.Option(None, "--policy", help="strict | kernelbench | off (default: the task's)"),
    configs: str = typer.Option("all", "--configs", help="seen | holdout | all"),
    dtype: Optional[list[str]] = typer.Option(None, "--dtype", help="evaluate only this dtype (repeatable)"),
    seed: int = typer.Option(0, "--seed"),
    device: Device = None,
    timeout: float = typer.Option(
        EvalOptions().request_timeout_s, "--timeout", min=0.1, metavar="<seconds>",
        help="seconds one request to the candidate (a call, the checks of one config) may take before it is "
             "killed as hung and the verdict is timeout; its import and first build keep the compile limit"),
    compile_ahead: Optional[int] = typer.Option(
        None, "--compile-ahead", min=0,
        help=f"helper processes compiling a Triton candidate's kernels ahead of its checks (default: up to "
             f"{MAX_HELPERS}, one per {CORES_PER_HELPER} cores, on a GPU of its own; 0: none)"),
    sanitize: bool = typer.Option(
        True, "--sanitize/--no-sanitize",
        help="compute-sanitizer memcheck, racecheck and initcheck on the small and edge configs (GPU only; "
             "seconds per candidate)"),
    cpu_max_elements: int = typer.Option(
        EvalOptions.cpu_max_elements, "--cpu-max-elements", min=1,
        help="on the CPU, skip configs whose inputs and weights, or whose outputs, have more elements (small "
             "configs always run); a task with nothing left is too large for this machine (exit 2)"),
    as_json: Json = False,
    debug: Debug = False,
) -> None:
    """Verify and time one candidate; exit 0 passed, 1 failed, 2 unusable input, 3 holdout failed."""
    try:
        if not candidate.is_file():
            raise TaskError(f"candidate {candidate} does not exist or is not a file")
        loaded = load_task(task)
        options = EvalOptions(policy=policy, configs=configs, dtypes=tuple(dtype) if dtype else None, seed=seed,
                              device=device, compile_ahead=compile_ahead, sanitize=sanitize, debug=debug,
                              request_timeout_s=timeout, cpu_max_elements=cpu_max_elements)
        console = Console(stderr=True)
        with stdout_to_stderr(), EvalSession(loaded, options) as session:
            require_fit(session)  # too large for this machine: the one line, before the banner
            console.print(f"[bold]{loaded.id}[/] on {session.device_label} ({session.mode.value})")
            with StageLine(console, loaded.id) as line:
                session.on_stage = line.stage
                verdict = session.evaluate(candidate)
    except UsageError as exc:
        report_usage_error(exc, debug)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        # The judge got the SIGINT; the candidate's process (its own process group, so the terminal's
        # Ctrl-C never reached it) was killed on the way out, without waiting for its answer.
        typer.secho("interrupted: the candidate's process was stopped; no verdict", err=True)
        leave(130)
    if as_json:
        sys.stdout.write(verdict.to_json() + "\n")
    else:
        print_verdict(verdict, Console())
    leave(verdict.exit_code)


class StageLine:
    """One live line on a terminal's stderr while a candidate is judged: the task, the stage running
    and for how long. Off a terminal (a pipe, a log file, a CI job) nothing is drawn."""

    def __init__(self, console: Console, task_id: str) -> None:
        self.console, self.task_id = console, task_id
        self.current: Stage | None = None
        self.stage_started = self.started = time.monotonic()
        self.live: Live | None = None

    def __enter__(self) -> "StageLine":
        if self.console.is_terminal:
            self.live = Live(self, console=self.console, refresh_per_second=4, transient=True)
            self.live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def stage(self, stage: Stage) -> None:
        self.current, self.stage_started = stage, time.monotonic()
        if self.live is not None:
            self.live.refresh()

    def __rich__(self) -> Text:
        now = time.monotonic()
        if self.current is None:
            return Text(f"{self.task_id} · starting · {now - self.started:.0f} s", style="dim")
        stages = list(Stage)
        return Text(f"{self.task_id} · {self.current.value} (stage {stages.index(self.current) + 1}/{len(stages)})"
                    f" · {now - self.stage_started:.0f} s in the stage, {now - self.started:.0f} s in all",
                    style="dim")


@contextlib.contextmanager
def stdout_to_stderr():
    """Whatever the evaluation prints (compilers, a baseline kernel, torch warnings) goes to stderr at
    the file-descriptor level, so stdout carries the verdict alone."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def print_verdict(verdict: Verdict, console: Console) -> None:
    colour = "green" if verdict.status.value == "passed" else "red"
    console.print(f"status [bold {colour}]{verdict.status.value}[/]  correct={verdict.correct}  "
                  f"compiled={verdict.compiled}  policy={verdict.policy}  mode={verdict.mode.value}")
    if verdict.error:
        console.print(f"[red]{verdict.failed_stage.value if verdict.failed_stage else ''}: {verdict.error}[/]")
    stages = Table(title="stages", show_edge=False)
    for col in ("stage", "passed", "seconds", "configs", "note"):
        stages.add_column(col)
    for s in verdict.stages:
        stages.add_row(s.name.value, "yes" if s.passed else "NO", f"{s.seconds:.2f}", str(len(s.configs)),
                       s.skipped or s.error or "")
    console.print(stages)
    for v in verdict.violations:
        console.print(f"[red]violation[/] {v.kind.value}: {v.detail}")
    if verdict.timings:
        table = Table(title="timings (µs, median)", show_edge=False)
        for col in ("config", "dtype", "phase", "method", "candidate", "eager", "compile", "baseline",
                    "×eager", "×compile", "% roofline"):
            table.add_column(col)
        for t in verdict.timings:
            table.add_row(t.config, t.dtype, t.phase, t.method, f"{t.candidate_us:.1f}", _f(t.eager_us),
                          _f(t.compile_us), _f(t.baseline_us), _f(t.speedup_vs_eager, 2),
                          _f(t.speedup_vs_compile, 2), _f(t.pct_of_roofline, 1))
        console.print(table)
    s = verdict.speedup
    if s.get("vs_eager"):
        console.print(f"speedup (geomean): ×{_f(s['vs_eager'], 2)} vs eager, ×{_f(s['vs_compile'], 2)} vs compile"
                      f", ×{_f(s['vs_baseline'], 2)} vs baseline")
    h = verdict.holdout
    if h.correct is not None:
        console.print(f"holdout: {'correct' if h.correct else 'FAILED ' + ', '.join(h.failed_configs)}")
    if verdict.compile_seconds is not None:
        console.print(f"compile {verdict.compile_seconds:.2f} s, evaluation {verdict.elapsed_s:.2f} s")
    for note in verdict.notes:
        console.print(f"[dim]note: {note}[/]")


def _f(x: float | None, digits: int = 1) -> str:
    return "—" if x is None else f"{x:.{digits}f}"
