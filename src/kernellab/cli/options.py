"""Options several commands share, defined once so that their names, values and help read the same
everywhere, and the help layout every command group uses.

Help is click's plain layout (``HELP_MARKUP = None``): typer's rich panels print a flag such as
``--json`` as ``--json <bool>``, as if it took a value; the plain layout prints ``--json`` and
``--sanitize / --no-sanitize``, and reads the same piped or on a terminal.
"""

from __future__ import annotations

from typing import Annotated

import typer

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


def plural(n: int, word: str, many: str | None = None) -> str:
    """``1 task``, ``2 tasks``, ``1 category``, ``15 categories``."""
    if n == 1:
        return f"{n} {word}"
    if many is None:
        many = word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"
    return f"{n} {many}"
