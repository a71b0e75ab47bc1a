"""``kernellab tasks list | show``: the suite, and any task folder, as tables or JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from kernellab.cli.errors import UsageError, report_usage_error
from kernellab.tasks.catalog import suite_tasks, task_summary
from kernellab.tasks.load import load_task
from kernellab.tasks.model import TaskError, Visibility

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
                      r["baseline_language"] or "", str(len(r["configs"])), str(len(r["holdout"])))
    console = Console()
    console.print(table)
    categories = sorted({r["category"] for r in rows})
    console.print(f"{len(rows)} tasks in {len(categories)} categories; "
                  f"{sum(r['backward'] for r in rows)} with backward; "
                  f"{sum(r['baseline_language'] == 'triton' for r in rows)} Triton and "
                  f"{sum(r['baseline_language'] == 'cuda' for r in rows)} CUDA baselines")


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


@app.command("validate")
def validate_command(
    path: Optional[str] = typer.Argument(None, help="a task folder, a folder of tasks, or a suite id prefix "
                                                    "(default: the whole suite)"),
    shard: Optional[str] = typer.Option(None, "--shard", help="i/n: this process validates every n-th task"),
    resume: bool = typer.Option(False, "--resume", help="skip tasks that passed in the state file"),
    state: Path = typer.Option(Path("kernellab-validate.json"), "--state", help="results, for --resume"),
    device: Optional[str] = typer.Option(None, "--device", help="cuda: all configs; cpu: small ones (default)"),
    max_elements: int = typer.Option(1 << 16, "--cpu-max-elements", help="on the CPU, skip larger configs"),
    debug: bool = typer.Option(False, "--debug"),
) -> None:
    """Reject degenerate tasks: near-constant outputs, inputs or weights that do not matter,
    non-deterministic references, configs that fail to run."""
    import torch

    from kernellab.evaluate.validate import shard as take_shard
    from kernellab.evaluate.validate import validate_task

    try:
        tasks = take_shard(_tasks_under(path), shard)
    except UsageError as exc:
        report_usage_error(exc, debug)
        raise typer.Exit(2) from None
    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    done = json.loads(state.read_text()) if resume and state.is_file() else {}
    console = Console(stderr=True)
    failed = 0
    for i, task in enumerate(tasks, 1):
        key = f"{task.id}|{task.sha256}|{dev}"
        if resume and done.get(key, {}).get("passed"):
            continue
        report = validate_task(task, dev, None if dev == "cuda" else max_elements)
        done[key] = report.to_dict()
        state.write_text(json.dumps(done, indent=1))  # after every task: an interrupted run loses nothing
        mark = "[green]ok[/]" if report.passed else "[red]FAILED[/]"
        console.print(f"[{i}/{len(tasks)}] {task.id}: {mark} ({len(report.checked_configs)} configs"
                      f"{', ' + str(len(report.skipped_configs)) + ' too large here' if report.skipped_configs else ''})")
        for failure in report.failures:
            console.print(f"    {failure}")
        failed += not report.passed
    console.print(f"{len(tasks) - failed}/{len(tasks)} tasks valid on {dev}")
    raise typer.Exit(1 if failed else 0)


def _tasks_under(path: Optional[str]) -> list:
    from kernellab.tasks.load import SUITE_ROOT

    if path is None:
        return suite_tasks()
    root = Path(path)
    if not root.exists() and (SUITE_ROOT / path).is_dir():
        root = SUITE_ROOT / path
    if (root / "reference.py").is_file() or root.suffix == ".py":
        return [load_task(root)]
    folders = sorted(p.parent for p in root.rglob("reference.py"))
    if not folders:
        raise TaskError(f"no tasks under {path}")
    return [load_task(f) for f in folders]
