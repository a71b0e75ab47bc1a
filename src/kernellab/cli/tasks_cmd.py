"""``kernellab tasks list | show``: the suite, and any task folder, as tables or JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from kernellab.cli.errors import UsageError, report_usage_error
from kernellab.cli.options import HELP_MARKUP, Debug, Device, Json, plural
from kernellab.tasks.catalog import suite_tasks, task_summary
from kernellab.tasks.load import load_task
from kernellab.tasks.model import TaskError, Visibility

app = typer.Typer(no_args_is_help=True, help="The task suite.", rich_markup_mode=HELP_MARKUP)


_SHORT_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64"}


@app.command("list")
def list_command(
    category: Optional[list[str]] = typer.Option(None, "--category", "-c", help="only these categories (repeatable)"),
    as_json: Json = False,
) -> None:
    """List the built-in tasks (counts per category at the end)."""
    every = suite_tasks()
    unknown = sorted(set(category or ()) - {t.category for t in every})
    if unknown:
        raise TaskError(f"no category {unknown[0]!r} in the suite; categories: "
                        f"{', '.join(sorted({t.category for t in every}))}")
    rows = [task_summary(t) for t in every if not category or t.category in category]
    if as_json:
        print(json.dumps({"tasks": rows}, indent=1))
        return
    console = whole_lines_console()
    table = Table(show_edge=False)
    # Ids are never cut short: a cut id cannot be grepped or passed to --task. The category is the
    # id's first part, so it has no column of its own; dtypes are abbreviated and wrap when narrow.
    table.add_column("id", no_wrap=True, min_width=max((len(r["id"]) for r in rows), default=2))
    table.add_column("dtypes", min_width=4)
    for col in ("bwd", "base", "seen", "hold"):
        table.add_column(col, no_wrap=True)
    for r in rows:
        table.add_row(r["id"], " ".join(_SHORT_DTYPES.get(d, d) for d in r["dtypes"]), "yes" if r["backward"] else "",
                      r["baseline_language"] or "", str(len(r["configs"])), str(len(r["holdout"])))
    console.print(table)
    categories = sorted({r["category"] for r in rows})
    console.print(f"{plural(len(rows), 'task')} in {plural(len(categories), 'category')}; "
                  f"{sum(r['backward'] for r in rows)} with backward; "
                  f"{plural(sum(r['baseline_language'] == 'triton' for r in rows), 'Triton baseline')}, "
                  f"{plural(sum(r['baseline_language'] == 'cuda' for r in rows), 'CUDA baseline')}",
                  highlight=False)


def whole_lines_console() -> Console:
    """On a terminal, its width; piped, wide enough that no row is wrapped or cut (``| grep`` sees
    whole rows)."""
    console = Console()
    return console if console.is_terminal else Console(width=1000)


@app.command("show")
def show_command(task: str = typer.Argument(..., help="suite id, task folder or .py file"),
                 as_json: Json = False, debug: Debug = False) -> None:
    """Show one task: metadata, configs by visibility, and its reference source."""
    try:
        t = load_task(task)
    except UsageError as exc:
        report_usage_error(exc, debug)
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps({**task_summary(t), "source": t.source}, indent=1))
        return
    console = whole_lines_console()
    # markup=False throughout: a task's text is shown as written ("[batch, n]" is not a style).
    console.print(f"{t.id}  ({t.category})  policy={t.policy.value}  dtypes={', '.join(t.dtypes)}",
                  markup=False, highlight=False, style="bold")
    if t.description:
        console.print(t.description, markup=False, highlight=False)
    for vis in Visibility:
        configs = t.configs_of(vis)
        if configs:
            console.print(f"{vis.value}: " + "; ".join(c.label for c in configs), markup=False, highlight=False)
    if console.is_terminal:
        console.print(Syntax(t.source, "python", theme="ansi_dark", word_wrap=True))
    else:
        console.file.write(t.source if t.source.endswith("\n") else t.source + "\n")


@app.command("validate")
def validate_command(
    path: Optional[str] = typer.Argument(None, help="a task folder, a folder of tasks, or a suite id prefix "
                                                    "(default: the whole suite)"),
    shard: Optional[str] = typer.Option(None, "--shard", help="i/n: this process validates every n-th task"),
    resume: bool = typer.Option(False, "--resume", help="skip tasks that passed in the state file"),
    state: Path = typer.Option(Path("kernellab-validate.json"), "--state", help="results, for --resume"),
    device: Device = None,
    max_elements: int = typer.Option(1 << 16, "--cpu-max-elements", help="on the CPU, skip larger configs"),
    debug: Debug = False,
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
        checked = plural(len(report.checked_configs), "config")
        console.print(f"[{i}/{len(tasks)}] {task.id}: {mark} ({checked}"
                      f"{', ' + str(len(report.skipped_configs)) + ' too large here' if report.skipped_configs else ''})")
        for failure in report.failures:
            console.print(f"    {failure}")
        failed += not report.passed
    console.print(f"{len(tasks) - failed}/{plural(len(tasks), 'task')} valid on {dev}")
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


@app.command("import")
def import_command(
    suite: str = typer.Argument(..., help="kernelbench-x | agentkernelarena | robust-kbench | gpumode"),
    path: Path = typer.Argument(..., help="your local checkout of the suite"),
    out: Path = typer.Option(..., "--out", help="folder to write the task folders into"),
    only: Optional[str] = typer.Option(None, "--only", help="only the suite's tasks whose path contains this"),
    as_json: bool = typer.Option(False, "--json", help="print the summary as one JSON document"),
    debug: bool = typer.Option(False, "--debug"),
) -> None:
    """Turn another benchmark's tasks into task folders (reference.py, task.toml, baseline.py where the
    suite has its own kernel, PROVENANCE.md), and say what was imported and what was not, and why."""
    from kernellab.tasks.importers import SUITES, import_suite

    try:
        if suite not in SUITES:
            raise TaskError(f"unknown suite {suite!r} (one of {', '.join(SUITES)})")
        if not path.is_dir():
            raise FileNotFoundError(f"{path} is not a folder (give your local checkout of {suite})")
        summary = import_suite(suite, path, out, only)
    except UsageError as exc:
        report_usage_error(exc, debug)
        raise typer.Exit(2) from None
    if as_json:
        print(json.dumps(summary.to_dict(), indent=1))
        return
    console = Console()
    for item in summary.imported:
        console.print(f"imported {item.source} -> {item.name} ({item.seen} seen, {item.edge} edge, "
                      f"{item.holdout} holdout{', baseline' if item.baseline else ''})")
    for item in summary.skipped:
        console.print(f"[yellow]skipped[/] {item.source}: {item.reason}")
    console.print(f"{len(summary.imported)} imported, {len(summary.skipped)} skipped into {summary.out}")
    for reason, count in summary.reasons().items():
        console.print(f"  {count:4d} skipped: {reason}")
