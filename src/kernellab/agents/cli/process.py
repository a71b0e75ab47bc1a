"""Run an agent CLI to completion or to its time limit, and leave nothing of it running.

The CLI starts in a session of its own (so its process group is its pid) with a marker variable in
its environment. On a timeout the group gets SIGTERM, then SIGKILL after a grace period; after every
run, timed out or not, whatever still carries the marker is killed too: a tool call's child that put
itself in another process group (a shell tool's background job, a sandbox helper) inherits the
environment and is found that way. Output goes straight to files, so a child that keeps a pipe open
cannot hold the run.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

MARKER = "KERNELLAB_AGENT_RUN"
TERM_GRACE_S = 3.0  # time a CLI gets after SIGTERM to write its last events before SIGKILL


@dataclass(frozen=True)
class RunResult:
    returncode: int | None  # None: killed at the time limit
    timed_out: bool
    wall_s: float
    pid: int  # also the process group id
    marker: str  # the value of $KERNELLAB_AGENT_RUN in the run's environment


def new_marker() -> str:
    return uuid.uuid4().hex


def run_process(argv: list[str], *, cwd: Path, env: dict[str, str], timeout_s: float | None,
                stdout_path: Path, stderr_path: Path) -> RunResult:
    """Run ``argv`` with exactly ``env`` (which must hold the marker), stdout and stderr to files."""
    marker = env.get(MARKER)
    if not marker:
        raise ValueError(f"the environment of an agent run must carry {MARKER}")
    start = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                start_new_session=True)
    timed_out = False
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        timed_out = True
        log.info("agent process %d ran past %.0fs: stopping its process group", proc.pid, timeout_s)
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=TERM_GRACE_S)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
    finally:
        if proc.returncode is None:  # interrupted while waiting (KeyboardInterrupt)
            _signal_group(proc.pid, signal.SIGKILL)
            proc.wait()
        kill_leftovers(proc.pid, marker)
    return RunResult(None if timed_out else proc.returncode, timed_out, time.monotonic() - start, proc.pid, marker)


def kill_leftovers(pgid: int, marker: str) -> None:
    """SIGKILL the run's process group and every process carrying its marker, until none is left."""
    for _ in range(10):
        _signal_group(pgid, signal.SIGKILL)
        pids = processes_with_marker(marker)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if not pids and not group_alive(pgid):
            return
        time.sleep(0.05)
    log.warning("processes of agent run %s survived SIGKILL: %s", marker, processes_with_marker(marker))


def group_alive(pgid: int) -> bool:
    """Whether any process (zombies aside) is still in process group ``pgid``."""
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        try:
            os.killpg(pgid, 0)
            return True
        except (ProcessLookupError, PermissionError):
            return False
    for entry in proc_dir.iterdir():
        if entry.name.isdigit():
            state, group = _stat(entry)
            if group == pgid and state not in ("Z", "X", None):
                return True
    return False


def processes_with_marker(marker: str) -> list[int]:
    """Live processes whose environment holds ``KERNELLAB_AGENT_RUN=marker`` (Linux /proc)."""
    needle = f"{MARKER}={marker}".encode()
    found = []
    proc_dir = Path("/proc")
    if not proc_dir.is_dir():
        return found
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and _stat(entry)[0] not in ("Z", "X", None):
            found.append(int(entry.name))
    return found


def _stat(entry: Path) -> tuple[str | None, int | None]:
    try:
        text = (entry / "stat").read_text()
    except OSError:
        return None, None
    fields = text[text.rfind(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp ...
    return fields[0], int(fields[2])


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass
