"""``kernellab agents list``: every registered agent adapter, whether it can run here, and whether
agents can be confined on this machine."""

from __future__ import annotations

import json

import typer
from rich.console import Console
from rich.table import Table

from kernellab.cli.options import HELP_MARKUP, Json

app = typer.Typer(no_args_is_help=True, help="Agent adapters.", rich_markup_mode=HELP_MARKUP)


def agent_rows() -> list[dict]:
    from kernellab.agents.base import registered

    rows = []
    for name, cls in registered().items():
        try:
            availability = cls.availability()
            usable, why = availability.usable, availability.why
        except Exception as exc:  # noqa: BLE001 - one adapter's defect must not hide the others
            usable, why = False, f"availability check failed: {type(exc).__name__}: {exc}"
        rows.append({"name": name, "usable": usable, "why": why, "uses_llm": cls.uses_llm})
    return rows


@app.command("list")
def list_command(as_json: Json = False) -> None:
    """List the agent adapters: usable here or why not, whether each uses an LLM, and confinement."""
    from kernellab.agents.confine import probe_confinement

    rows = agent_rows()
    probe = probe_confinement()
    confinement = {"available": probe.available, "detail": probe.detail}
    if as_json:
        print(json.dumps({"agents": rows, "confinement": confinement}, indent=1))
        return
    table = Table(show_edge=False)
    for col in ("agent", "usable", "LLM", "why"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], "[green]yes[/]" if r["usable"] else "[red]no[/]", "yes" if r["uses_llm"] else "no",
                      r["why"])
    console = Console()
    console.print(table)
    if probe.available:
        console.print(f"confinement: available ({probe.detail})")
    else:
        console.print(f"confinement: [red]not available[/]: {probe.detail}; agent runs here are marked unconfined")
