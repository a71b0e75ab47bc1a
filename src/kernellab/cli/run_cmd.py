"""``kernellab run``: a campaign of tasks × agents × seeds (docs/run.md).

The standing (jobs done, passing, best speedups, ETA) is a live panel on a terminal and one line per
finished job otherwise, on stderr; stdout gets the summary. Exit status: 0 every job finished, 1 some
did not, 2 unusable input (one line, nothing written), 130 interrupted (resume with ``--resume``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from kernellab.cli.errors import UsageError, report_usage_error
from kernellab.cli.options import Debug, Device
from kernellab.cli.solve_cmd import note_ignored_budget


def parse_agent_options(values: list[str] | None, agents: list[str]) -> dict[str, dict[str, str]]:
    """``agent:key=value`` for one agent, ``key=value`` for every agent."""
    from kernellab.run.campaign import CampaignError

    out: dict[str, dict[str, str]] = {}
    for item in values or []:
        head, sep, value = item.partition("=")
        if not sep or not head.strip():
            raise CampaignError(f"--agent-option {item!r} is not agent:key=value (or key=value)")
        agent, colon, key = head.partition(":")
        names = [agent.strip()] if colon else agents
        key = key.strip() if colon else head.strip()
        if not key:
            raise CampaignError(f"--agent-option {item!r} names no option")
        for name in names:
            out.setdefault(name, {})[key] = value
    return out


def parse_gpus(text: str | None) -> tuple[int, ...] | None:
    from kernellab.run.campaign import CampaignError

    if text is None:
        return None
    try:
        gpus = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise CampaignError(f"--gpus {text!r} is not a comma-separated list of GPU indices") from None
    if not gpus or len(set(gpus)) != len(gpus) or min(gpus) < 0:
        raise CampaignError(f"--gpus {text!r}: name each GPU index once, e.g. 0,1")
    return gpus


def check_agents(spec, backend: str) -> None:
    """Build the strategy and each agent once with their options, in ``solve``'s order, so that a
    missing or wrong option (``replay`` without ``kernels=``, an unknown key) is a usage error before
    anything is written, not a campaign whose every job fails. On Ray the workers build the agents:
    their hosts may have an agent's CLI or recorded kernels this one lacks."""
    from kernellab.agents.base import create_agent
    from kernellab.agents.strategies import create_strategy

    create_strategy(spec.strategy, **dict(spec.strategy_options))
    if backend == "ray":
        return
    for name in spec.agents:
        create_agent(name, **spec.options_for(name))


def run_command(
    tasks: Annotated[str, typer.Option("--tasks", help="suite ids, categories, 'suite', task folders or files; "
                                                        "comma-separated")],
    agent: Annotated[list[str], typer.Option("--agent", help="agent adapter (repeatable)")],
    out: Annotated[Path, typer.Option("--out", help="run directory (new or empty; with --resume, an earlier one)")],
    agent_option: Annotated[list[str] | None, typer.Option(
        "--agent-option", help="agent:key=value for one agent, key=value for all (repeatable)")] = None,
    seeds: Annotated[int, typer.Option("--seeds", help="seeds per (task, agent): 0..N-1")] = 1,
    strategy: Annotated[str, typer.Option("--strategy", help="single | best-of-n | keep-revert | evolve")] = "single",
    strategy_option: Annotated[list[str] | None, typer.Option(
        "--strategy-option", help="key=value for the strategy (repeatable)")] = None,
    budget: Annotated[str | None, typer.Option("--budget", help="per job: 30m, $5, 50it, or several (30m,$5)")] = None,
    gpus: Annotated[str | None, typer.Option("--gpus", help="GPU indices as this process sees them (under "
                                                             "CUDA_VISIBLE_DEVICES=2,3, 0 is GPU 2), e.g. 0,1 "
                                                             "(default: every GPU)")] = None,
    backend: Annotated[str, typer.Option("--backend", help="local | ray")] = "local",
    address: Annotated[str | None, typer.Option("--address", help="Ray cluster address (ray backend)")] = None,
    agent_concurrency: Annotated[int | None, typer.Option(
        "--agent-concurrency", help="jobs at once (default: one per GPU; 1 without a GPU)")] = None,
    device: Device = None,
    eval_option: Annotated[list[str] | None, typer.Option(
        "--eval-option", help="key=value for every job's evaluation: compile_baseline, time_holdout, "
                              "timing_budget_s (repeatable)")] = None,
    gpu_lock: Annotated[str, typer.Option(
        "--gpu-lock", help="evaluation: one evaluation at a time per GPU; timing: correctness checks overlap, "
                           "one timing at a time")] = "evaluation",
    retime_rounds: Annotated[int, typer.Option(
        "--retime-rounds", help="rounds of the finalists' interleaved re-timing at the end (0: none)")] = 3,
    no_confine: Annotated[bool, typer.Option("--no-confine", help="run CLI agents unconfined (marked so)")] = False,
    resume: Annotated[bool, typer.Option("--resume", help="continue the campaign in --out")] = False,
    debug: Debug = False,
) -> None:
    """Run a campaign: every task × agent × seed under a strategy; resumable, on local GPUs or Ray."""
    from kernellab.agents.base import AgentError
    from kernellab.cli.solve_cmd import parse_pairs
    from kernellab.run.campaign import CampaignError, CampaignSpec, resolve_tasks
    from kernellab.run.orchestrator import plan_placement, run_campaign
    from kernellab.score import StoreError

    console = Console(stderr=True, soft_wrap=True)
    try:
        if backend not in ("local", "ray"):
            raise CampaignError(f"--backend {backend!r} is not local or ray")
        if address is not None and backend != "ray":
            raise CampaignError("--address is for --backend ray")
        if backend == "ray":
            from kernellab.run.backends.ray_backend import import_ray

            import_ray()
        spec = CampaignSpec(tasks=resolve_tasks(tasks), agents=tuple(agent), seeds=seeds, strategy=strategy,
                            agent_options=parse_agent_options(agent_option, list(agent)),
                            strategy_options=parse_pairs(strategy_option, "--strategy-option"), budget=budget,
                            confine=not no_confine, eval_options=parse_pairs(eval_option, "--eval-option"))
        if not resume:  # a resumed campaign must have the spec it started with, checked then
            check_agents(spec, backend)
        note_ignored_budget(spec.strategy, spec.budget, console)
        placement = plan_placement(gpus=parse_gpus(gpus), backend=backend, address=address,
                                   agent_concurrency=agent_concurrency, device=device, lock_scope=gpu_lock)
        if placement.agent_concurrency < 1:
            raise CampaignError(f"--agent-concurrency must be at least 1, not {placement.agent_concurrency}")
        if retime_rounds < 0:
            raise CampaignError(f"--retime-rounds must be 0 or more, not {retime_rounds}")
        outcome = run_campaign(out, spec, placement, resume=resume, console=console, debug=debug,
                               retime_rounds=retime_rounds)
    except (*UsageError, AgentError, StoreError) as exc:
        report_usage_error(exc, debug)
        raise typer.Exit(2) from None
    s = outcome.standing
    stdout = Console(soft_wrap=True)
    if outcome.interrupted:
        stdout.print(f"interrupted: {s.done}/{s.total} jobs finished; continue with --resume --out {out}",
                     markup=False, highlight=False)
    else:
        crashed = f", {s.crashed} crashed (see logs/)" if s.crashed else ""
        stdout.print(f"{s.done}/{s.total} jobs finished, {s.passing} passing, {s.not_passing} not passing{crashed} "
                     f"· {placement.mode} · report: kernellab report {out}", markup=False, highlight=False)
    raise typer.Exit(outcome.exit_code)
