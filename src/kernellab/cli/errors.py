"""Turning user-fixable errors into one line and exit status 2."""

from __future__ import annotations

import importlib
import traceback

import typer

from kernellab.tasks.model import TaskError

UsageError = (TaskError, FileNotFoundError, PermissionError, IsADirectoryError)

# click's exceptions as the installed typer raises them: click's own, or (typer >= 0.20) its copy of click
_click_errors = importlib.import_module(typer.BadParameter.__module__)
ClickUsageError = _click_errors.UsageError
NoArgsIsHelp = getattr(_click_errors, "NoArgsIsHelpError", ())  # click >= 8.2: the help, shown as it is


def report_usage_error(exc: BaseException, debug: bool) -> None:
    if debug:
        traceback.print_exception(exc)
    typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)


def click_usage_error(exc: ClickUsageError) -> ValueError:
    """A usage error click found while parsing, as one line naming the command's help."""
    command = exc.ctx.command_path if exc.ctx is not None else "kernellab"
    return ValueError(f"{exc.format_message()} (see: {command} --help)".replace("\n", " "))
