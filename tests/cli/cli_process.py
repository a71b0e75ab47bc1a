"""Running ``kernellab`` as users do: a real process, piped or on a pseudo-terminal."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).parents[2]


def kernellab(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """``kernellab ARGS`` with stdout and stderr piped (not a terminal)."""
    return subprocess.run([sys.executable, "-m", "kernellab.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout, env={**os.environ, **(env or {})})


def kernellab_on_terminal(*args: str, columns: int = 100, timeout: float = 300) -> tuple[int, str]:
    """``kernellab ARGS`` with stdout and stderr on one pseudo-terminal: its exit status and all it drew."""
    leader, follower = pty.openpty()
    env = {**os.environ, "COLUMNS": str(columns), "LINES": "40", "TERM": "xterm-256color"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "kernellab.cli.main", *args], stdin=subprocess.DEVNULL,
                            stdout=follower, stderr=follower, cwd=ROOT, env=env, close_fds=True)
    os.close(follower)
    chunks, deadline = [], time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    data = os.read(leader, 65536)
                except OSError:  # the process closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        os.close(leader)
        if proc.poll() is None:
            proc.kill()
    return code, b"".join(chunks).decode(errors="replace")
