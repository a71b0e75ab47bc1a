"""Whether the worker process that claimed a job still exists (used to requeue jobs of dead workers)."""

from __future__ import annotations

import os
from pathlib import Path


def process_start(pid: int) -> str | None:
    """The kernel's start time of ``pid`` (clock ticks since boot, from /proc), or None off Linux.
    Together with the pid it names one process: a pid reused later has a different start time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return fields[19] if len(fields) > 19 else None


def process_alive(pid: int, started: str | None = None) -> bool:
    """Whether the process ``pid`` on this host still runs (a zombie does not; nor does a later
    process that reuses the pid, when ``started`` is known)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True  # no /proc: the signal said it exists
    if stat[stat.rindex(")") + 2:].split()[0] in ("Z", "X"):
        return False
    return started is None or process_start(pid) == started
