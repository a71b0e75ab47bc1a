"""``kernellab solve``: one task, one agent, one strategy, within a budget (docs/solve.md).

A live display on stderr shows the iteration, the best kernel so far, the budget left and the last
verdict; stdout carries the summary, or with ``--json`` exactly the ``result.json`` document.
Exit status: 0 the final verdict passed, 1 it failed (or no kernel came), 2 unusable input (one
line), 3 seen configs passed but holdout failed, 130 interrupted (what was recorded stays).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Self

import typer
from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from kernellab.agents.strategies import registered_strategies
from kernellab.cli.errors import UsageError, report_usage_error
from kernellab.cli.eval_cmd import stdout_to_stderr
from kernellab.cli.options import Debug, Device, Json, plural

_PHASES = {"start": "starting", "proposing": "the agent is working", "verifying": "the verifier is judging",
           "evaluating": "evaluating", "iteration": "decided", "final": "final verdict", "done": "done"}


def parse_pairs(values: list[str] | None, flag: str) -> dict[str, str]:
    """``key=value`` strings as a dict; anything else is a one-line usage error."""
    from kernellab.agents.base import AgentError

    pairs: dict[str, str] = {}
    for item in values or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise AgentError(f"{flag} {item!r} is not key=value")
        pairs[key.strip()] = value
    return pairs


def note_ignored_budget(strategy: str, budget: str | None, console: Console) -> None:
    """A strategy that makes a fixed number of proposals ignores a larger iteration budget: say so
    up front (``single`` with ``--budget 3it`` makes one proposal)."""
    from kernellab.agents.base import Budget
    from kernellab.agents.strategies.base import max_proposals

    limit, iterations = max_proposals(strategy), Budget.parse(budget).iterations
    if limit is not None and iterations is not None and iterations > limit:
        others = ", ".join(n for n in registered_strategies() if max_proposals(n) is None)
        console.print(f"note: --strategy {strategy} makes {plural(limit, 'proposal')}; the "
                      f"budget's {iterations} iterations are not used (strategies that use them: {others})",
                      markup=False, highlight=False)


def solve_command(
    task: Annotated[str, typer.Option("--task", help="suite id (e.g. elementwise/relu), task folder or .py file")],
    agent: Annotated[str, typer.Option("--agent", help="agent adapter (kernellab agents list)")],
    out: Annotated[Path, typer.Option("--out", help="output folder (new or empty; with --resume, an earlier one)")],
    agent_option: Annotated[list[str] | None, typer.Option(
        "--agent-option", help="key=value for the agent (repeatable), e.g. kernels=recorded/")] = None,
    strategy: Annotated[str, typer.Option("--strategy", help=" | ".join(registered_strategies()))] = "single",
    strategy_option: Annotated[list[str] | None, typer.Option(
        "--strategy-option", help="key=value for the strategy (repeatable), e.g. n=8, patience=3")] = None,
    budget: Annotated[str | None, typer.Option(
        "--budget", help="30m, 90s, 2h, $5, 50it, or several joined by commas (30m,$5)")] = None,
    no_confine: Annotated[bool, typer.Option("--no-confine", help="run CLI agents unconfined (marked so)")] = False,
    seed: Annotated[int, typer.Option("--seed", help="seeds the strategy and the agent's proposals")] = 0,
    device: Device = None,
    resume: Annotated[bool, typer.Option("--resume", help="continue an unfinished solve in --out")] = False,
    as_json: Json = False,
    debug: Debug = False,
) -> None:
    """Solve one task with one agent and a strategy; exit 0 passed, 1 failed, 2 unusable, 3 holdout failed."""
    from kernellab.agents.base import AgentError, Budget
    from kernellab.agents.solve import SolveOptions, solve
    from kernellab.evaluate.options import EvalOptions
    from kernellab.score import StoreError

    console = Console(stderr=True, soft_wrap=True)
    try:
        parsed_budget = Budget.parse(budget)
        agent_options = parse_pairs(agent_option, "--agent-option")
        strategy_options = parse_pairs(strategy_option, "--strategy-option")
        note_ignored_budget(strategy, budget, console)
        display = LiveDisplay(console, f"{task} · {agent} · {strategy} · budget {parsed_budget}")
        with stdout_to_stderr(), display:
            options = SolveOptions(agent, out, agent_options, strategy, strategy_options, parsed_budget,
                                   confine=not no_confine, seed=seed, resume=resume,
                                   eval_options=EvalOptions(device=device, debug=debug))
            result = solve(task, options, progress=display.update)
    except (*UsageError, AgentError, StoreError) as exc:
        report_usage_error(exc, debug)
        raise typer.Exit(2) from None
    if as_json:
        sys.stdout.write(json.dumps(json.loads(result.result_path.read_text()), indent=1) + "\n")
    else:
        print_result(result, Console(soft_wrap=True))
    raise typer.Exit(result.exit_code)


class LiveDisplay:
    """A rich live panel on a terminal; one line per decision either way."""

    def __init__(self, console: Console, title: str) -> None:
        self.console = console
        self.title = title
        self.live: Live | None = None
        self.last = None
        self.last_line = ""  # the last verdict, kept while later reports carry none

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live is not None:
            self.live.__exit__(None, None, None)

    def _open(self) -> None:
        """On the first progress report: a bad input ends before it, with nothing but its error line."""
        if self.console.is_terminal:
            self.live = Live(self._render(), console=self.console, refresh_per_second=4, transient=False)
            self.live.__enter__()
        else:
            self.console.print(f"solve {self.title}", markup=False, highlight=False)

    def update(self, progress) -> None:
        if self.last is None:
            self._open()
        self.last = progress
        self.last_line = progress.last or self.last_line
        if progress.phase == "iteration":
            self.console.print(f"[{progress.iteration}] {progress.last} — {progress.message}", markup=False,
                               highlight=False)
        elif progress.phase == "start" and progress.last:
            self.console.print(f"[0] {progress.last}", markup=False, highlight=False)
        if self.live is not None:
            self.live.update(self._render())

    def _render(self) -> Panel:
        p = self.last
        if p is None:
            return Panel(Text("starting: building the workspace and the evaluator"), title=f"solve {self.title}")
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold")
        grid.add_column()
        doing = _PHASES.get(p.phase, p.phase) + (f": {p.message}" if p.message and p.phase != "iteration" else "")
        grid.add_row("iteration", f"{p.iteration} ({p.iterations} recorded) — {doing}")
        best = p.best + (f"  [x{p.best_speedup:.2f}]" if p.best_speedup else "")
        grid.add_row("best", best)
        grid.add_row("budget", " · ".join(f"{k} {v}" for k, v in p.budget.items()) or "unlimited")
        grid.add_row("spent", f"{p.elapsed_s:.0f} s, ${p.cost_usd:.2f}")
        grid.add_row("last", self.last_line or "—")
        return Panel(Group(grid), title=f"solve {self.title}")


def print_result(result, console: Console) -> None:
    colour = {"passed": "green", "holdout_failed": "yellow", "interrupted": "yellow"}.get(result.status, "red")
    console.print(f"[bold {colour}]{result.status}[/]  {result.task_id} · {result.agent} · {result.strategy} · "
                  f"seed {result.seed}")
    if result.summary:
        console.print(f"  {result.summary}", markup=False, highlight=False)
    if result.stop is not None:
        console.print(f"  stopped: {result.stop.reason}", markup=False, highlight=False)
    v = result.final_verdict
    if v is not None:
        holdout = {True: "correct", False: "FAILED", None: "not run"}[v.holdout.correct]
        speed = v.speedup.get("vs_eager")
        timed = f"x{speed:.2f} vs eager" if speed else "not timed" + (" (interpreter)" if v.mode.value == "interpret"
                                                                         else "")
        console.print(f"  final verdict: {v.status.value}, correct={v.correct}, holdout {holdout}, {timed}")
        if v.error:
            console.print(f"  {v.failed_stage.value if v.failed_stage else ''}: {v.error}", markup=False,
                          highlight=False)
    if result.best_kernel is not None:
        console.print(f"  best kernel: {result.best_kernel} ({result.best_candidate})", highlight=False)
    u = result.usage
    tokens = "?" if u.tokens_in is None else f"{u.tokens_in + (u.tokens_out or 0)}"
    cost = f"${result.cost_usd:.2f}" + (" + unknown" if result.cost_unknown else "")
    console.print(f"  {plural(result.iterations, 'proposal')}, {tokens} tokens, {cost}, "
                  f"{plural(u.steps, 'agent step')}, "
                  f"agent {u.wall_s:.0f} s, evaluation {result.eval_s:.0f} s, total {result.elapsed_s:.0f} s")
    confined = "confined" if result.confined else f"UNCONFINED ({result.confinement.reason})"
    console.print(f"  {confined}; trajectory {result.trajectory_path}", highlight=False)
    if result.interrupted:
        console.print(f"  interrupted: what was recorded stays in {result.out_dir}; continue with --resume",
                      highlight=False)
