"""``kernellab optimize``: profile a model, speed up its hot ops and chains, install them, verify
the whole model (docs/optimize.md). Progress goes to stderr; stdout carries the summary, or with
``--json`` the end-to-end check (``verify.json``). Exit status: 0 the optimized model passed its
end-to-end check, 1 it did not, 2 unusable input (one line)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from kernellab.cli.errors import UsageError, report_usage_error


def optimize_command(
    model: Annotated[str, typer.Argument(help="file.py:factory, a transformers config.json, or a preset "
                                              "(llama, llama-tiny, vit, vit-tiny)")],
    inputs: Annotated[str, typer.Option("--inputs", help="sizes: B=4,S=2048 or 4x2048 (images: B=8)")],
    out: Annotated[Path, typer.Option("--out", help="output folder")],
    mode: Annotated[str, typer.Option("--mode", help="infer | train (forward + loss + backward)")] = "infer",
    dtype: Annotated[str, typer.Option("--dtype", help="bf16 | fp16 | fp32")] = "bf16",
    agent: Annotated[str, typer.Option("--agent", help="agent adapter for each op (kernellab agents list)")] = "search",
    strategy: Annotated[str, typer.Option("--strategy", help="strategy for each op")] = "keep-revert",
    budget: Annotated[str, typer.Option("--budget", help="whole budget, split between the ops (30m, 50it)")] = "30m",
    top: Annotated[int, typer.Option("--top", help="how many ops/chains to extract and solve")] = 8,
    device: Annotated[str | None, typer.Option("--device", help="cuda | cpu (default: cuda when present)")] = None,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    skip_ops: Annotated[str, typer.Option("--skip-ops", help="single ops left to their libraries (comma list; "
                                                           "'' extracts them too)")] = "linear,matmul,sdpa,conv2d",
    no_compile_compare: Annotated[bool, typer.Option("--no-compile-compare",
                                                     help="do not time torch.compile variants")] = False,
    no_sanitize: Annotated[bool, typer.Option("--no-sanitize", help="skip compute-sanitizer in the ops' final "
                                                                    "verdicts (faster; marked in each verdict)")] = False,
    agent_option: Annotated[list[str] | None, typer.Option("--agent-option", help="key=value (repeatable)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print verify.json on stdout")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="tracebacks")] = False,
) -> None:
    """Profile a model, speed up its hot ops, install them, verify the whole model; exit 0 passed,
    1 failed, 2 unusable input."""
    from kernellab.agents.base import AgentError
    from kernellab.cli.solve_cmd import parse_pairs
    from kernellab.optimize.model_source import ModelSourceError
    from kernellab.optimize.pipeline import OptimizeOptions, optimize, summary_lines

    try:
        options = OptimizeOptions(model=model, inputs=inputs, out=out, mode=mode, dtype=dtype, agent=agent,
                                  strategy=strategy, budget=budget, top=top, device=device, seed=seed,
                                  agent_options=tuple(parse_pairs(agent_option, "--agent-option").items()),
                                  skip_ops=tuple(o.strip() for o in skip_ops.split(",") if o.strip()),
                                  compare_compile=not no_compile_compare, sanitize=not no_sanitize)
        result = optimize(options, progress=lambda m: typer.echo(m, err=True))
    except (*UsageError, AgentError, ModelSourceError, ValueError) as exc:
        report_usage_error(exc, debug)
        raise typer.Exit(2) from None
    if as_json:
        sys.stdout.write(json.dumps(result.verify.to_dict(), indent=1, default=str) + "\n")
    else:
        typer.echo("\n".join(summary_lines(result)))
        typer.echo(f"report: {result.out / 'report.md'}")
    raise typer.Exit(0 if result.verify.passed else 1)
