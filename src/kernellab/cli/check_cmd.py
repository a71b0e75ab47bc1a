"""``kernellab check``: inside an agent workspace, check ./kernel.py on the public configs.

The same evaluation the workspace's ``check`` asks the orchestrator's check service for, run here:
seen, edge and small configs of the workspace task (which has no holdout configs), compact feedback.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from kernellab.agents.workspace import WorkspaceError, find_workspace
from kernellab.cli.errors import UsageError, report_usage_error
from kernellab.cli.eval_cmd import stdout_to_stderr
from kernellab.cli.options import Debug, Device, Json
from kernellab.evaluate.options import EvalOptions


def check_command(
    profile: Annotated[bool, typer.Option("--profile", help="also show where the time goes in the kernel")] = False,
    as_json: Json = False,
    workspace: Annotated[Path | None, typer.Option(
        "--workspace", help="the workspace (default: the one holding the current folder)")] = None,
    device: Device = None,
    debug: Debug = False,
) -> None:
    """Check ./kernel.py of an agent workspace: exit 0 passed, 1 failed, 2 unusable input."""
    from kernellab.agents.check_service import Checker

    try:
        ws = find_workspace(workspace or Path.cwd())
        if not ws.kernel_path.is_file():
            raise WorkspaceError(f"no kernel.py in the workspace {ws.path}")
        task = ws.task()
        with stdout_to_stderr():
            checker = Checker(task, EvalOptions(device=device, debug=debug))
            try:
                report = checker.check(ws.kernel_path, profile=profile)
            finally:
                checker.close()
    except UsageError as exc:
        report_usage_error(exc, debug)
        raise typer.Exit(2) from None
    if as_json:
        sys.stdout.write(json.dumps(report.answer(), indent=1, default=str) + "\n")
    else:
        sys.stdout.write(report.feedback)
    raise typer.Exit(report.exit_code)
