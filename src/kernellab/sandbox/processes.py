"""Processes a candidate starts, seen from outside its process.

A process the candidate starts and leaves running outlives the call that started it: it runs while
the judge checks the reply, times the eager and compiled baselines on the same GPU (a second CUDA
context that spins there slows them, and the candidate's speedup grows), and while the next call's
inputs load. Nothing in the candidate's process can be trusted to report it, so the judge looks at
the process table itself after every answer.

Every sandbox child is a *child subreaper*: a grandchild whose parent exits (a double fork, a
``setsid`` daemon) is re-parented to the child, not to init. So a live descendant of the child always
shows up as a direct child of it, and "no live child" means "no live descendant".
"""

from __future__ import annotations

import ctypes
import os
import signal
from dataclasses import dataclass

_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class ProcessInfo:
    pid: int
    name: str  # the kernel's short command name (``comm``)
    state: str  # R, S, D, T, Z, ...

    def __str__(self) -> str:
        return f"pid {self.pid} ({self.name})"


def become_subreaper() -> bool:
    """Orphaned descendants of this process are re-parented to it instead of init, where they can be
    found and killed. False where the kernel does not offer it (then orphans go to init)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _stat(pid: int, tid: int | None = None) -> tuple[int, str, str] | None:
    """(parent pid, command name, state) of ``pid`` (of its thread ``tid``), None if it is gone."""
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except OSError:
        return None
    head, _, rest = raw.rpartition(b")")
    fields = rest.split()
    if len(fields) < 2:
        return None
    return int(fields[1]), head.partition(b"(")[2].decode(errors="replace"), fields[0].decode()


def _listed_children(pid: int) -> list[int] | None:
    """Children from ``/proc/PID/task/*/children`` (one small read per thread); None where the
    kernel does not offer that file, or ``pid`` is gone."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    found: list[int] = []
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                found.extend(int(p) for p in f.read().split())
        except FileNotFoundError:
            if tid == tasks[0]:
                return None  # no such file here at all: scan the table instead
        except OSError:
            continue
    return found


def children_of(pid: int) -> list[int]:
    """Every process whose parent is ``pid`` now (zombies included)."""
    listed = _listed_children(pid)
    if listed is not None:
        return listed
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _stat(int(entry))
            if stat is not None and stat[0] == pid:
                found.append(int(entry))
    return found


def _ended(pid: int, state: str) -> bool:
    """Whether the whole process has ended. A process reads as a zombie as soon as its *leader* thread
    has exited (a raw ``exit`` system call), while its other threads may run on: it has ended only
    when none of its threads is left running."""
    if state not in ("Z", "X"):
        return False
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return True
    for tid in tasks:
        stat = _stat(pid, int(tid))
        if stat is not None and stat[2] not in ("Z", "X"):
            return False
    return True


def live_children(pid: int) -> list[ProcessInfo]:
    """The children of ``pid`` that still run (or sleep, or are stopped): those that have ended
    (zombies whose every thread has exited) can do nothing, so they are left out."""
    found = []
    for child in children_of(pid):
        stat = _stat(child)
        if stat is not None and stat[0] == pid and not _ended(child, stat[2]):
            found.append(ProcessInfo(child, stat[1], stat[2]))
    return found


class Unsettled(Exception):
    """The children of a process changed while the judge read them: something of its own still ran."""


def settled_live_children(pid: int) -> list[ProcessInfo]:
    """``live_children``, read between two lists of ``pid``'s children (zombies included) that must
    be the same, else ``Unsettled``.

    One read is a snapshot a process can slip out of: a chain whose every process starts the next
    in a session of its own and exits at once is, when its state is read, always the one that has
    just exited, its successor not yet listed. But a process that exits has its children re-parented
    (to the subreaper) before it reads as a zombie, and then it is a zombie child itself: the list
    changes. Read after an answer, when nothing of the candidate's should run, a list that changes is
    a process of its own that was still running, whatever it was by the time its state was read."""
    before = sorted(children_of(pid))
    live = live_children(pid)
    if sorted(children_of(pid)) != before:
        raise Unsettled(f"the children of {pid} changed while they were read")
    return live


def kill_descendants(pid: int, rounds: int = 200) -> None:
    """SIGKILL every live descendant of ``pid`` (those that left its process group too), again until
    a settled read finds none: a chain of short-lived processes, each starting the next, is ahead of
    one walk of the tree."""
    for _ in range(rounds):
        try:
            live = settled_live_children(pid)
            if not live:
                return
        except Unsettled:
            live = live_children(pid)
        todo = [p.pid for p in live]
        while todo:
            child = todo.pop()
            todo.extend(p.pid for p in live_children(child))  # before the kill re-parents them
            try:
                os.kill(child, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
