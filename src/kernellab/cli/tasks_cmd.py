"""``kernellab tasks list | show``: the suite, and any task folder, as tables or JSON."""

from __future__ import annotations

import json
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from kernellab.cli.errors import UsageError, report_usage_error
from kernellab.tasks.catalog import suite_tasks, task_summary
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Visibility

app = typer.Typer(no_args_is_help=True, help="The task suite.")


@app.command("list")
def list_command(
    category: Optional[list[str]] = typer.Option(None, "--category", "-c", help="only these categories"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """List the built-in tasks (counts per category at the end)."""
    tasks = [t for t in suite_tasks() if not category or t.category in category]
    rows = [task_summary(t) for t in tasks]
    if as_json:
        print(json.dumps({"tasks": rows}, indent=1))
        return
    table = Table(show_edge=False)
    for col in ("id", "category", "dtypes", "backward", "baseline", "seen", "holdout"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["id"], r["category"], ",".join(r["dtypes"]), "yes" if r["backward"] else "",
                      r["baseline_backend"] or "", str(len(r["configs"])), str(len(r["holdout"])))
    console = Console()
    console.print(table)
    categories = sorted({r["category"] for r in rows})
    console.print(f"{len(rows)} tasks in {len(categories)} categories; "
                  f"{sum(r['backward'] for r in rows)} with backward; "
                  f"{sum(r['baseline_backend'] == 'triton' for r in rows)} Triton and "
                  f"{sum(r['baseline_backend'] == 'cuda' for r in rows)} CUDA baselines")


@app.command("show")
def show_command(task: str = typer.Argument(..., help="suite id, task folder or .py file"),
                 debug: bool = typer.Option(False, "--debug")) -> None:
    """Show one task: metadata, configs by visibility, and its reference source."""
    try:
        t = load_task(task)
    except UsageError as exc:
        report_usage_error(exc, debug)
        raise typer.Exit(2) from None
    console = Console()
    console.print(f"[bold]{t.id}[/]  ({t.category})  policy={t.policy.value}  dtypes={', '.join(t.dtypes)}")
    if t.description:
        console.print(t.description)
    for vis in Visibility:
        configs = t.configs_of(vis)
        if configs:
            console.print(f"[bold]{vis.value}[/]: " + "; ".join(c.label for c in configs))
    console.print(t.source)
