"""Options several commands share, defined once so that their names, values and help read the same
everywhere, and the help layout every command group uses.

Help is click's plain layout (``HELP_MARKUP = None``): typer's rich panels print a flag such as
``--json`` as ``--json <bool>``, as if it took a value; the plain layout prints ``--json`` and
``--sanitize / --no-sanitize``, and reads the same piped or on a terminal.
"""

from __future__ import annotations

from typing import Annotated

import typer

from kernellab.report.cells import plural  # noqa: F401 - the CLI's counts read as the report's do

HELP_MARKUP = None  # typer.Typer(rich_markup_mode=...) of every command group
DEVICES = ("cuda", "cpu")



def _device(value: str) -> str:
    if value not in DEVICES:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(DEVICES)}")
    return value


Device = Annotated[str | None, typer.Option(
    "--device", parser=_device, metavar="<cuda|cpu>",
    help="cuda | cpu (default: cuda when a GPU is visible; cpu runs Triton under its interpreter on the small "
         "configs, untimed)")]
Json = Annotated[bool, typer.Option("--json", help="print exactly one JSON document on stdout")]
Debug = Annotated[bool, typer.Option("--debug", help="tracebacks and worker logs")]
