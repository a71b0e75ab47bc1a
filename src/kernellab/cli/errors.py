"""Turning user-fixable errors into one line and exit status 2."""

from __future__ import annotations

import traceback

import typer

from kernellab.tasks.model import TaskError

UsageError = (TaskError, FileNotFoundError, PermissionError, IsADirectoryError)


def report_usage_error(exc: BaseException, debug: bool) -> None:
    if debug:
        traceback.print_exception(exc)
    typer.secho(f"error: {exc}", err=True, fg=typer.colors.RED)
