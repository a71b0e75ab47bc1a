"""The start and end of a ``kernellab eval`` process, where a cold evaluation lost seconds.

- Start: the fork server is started before the judge imports torch. Both processes spend their
  first seconds importing torch (the server triton too); started one after the other, a cold
  ``kernellab eval`` waited for the second import at the candidate's ``load``. Started first thing
  in the process, the two overlap; the session later asks for a server with the same environment
  and gets this one. This module imports nothing heavy.
- End: once the verdict is written, the process leaves without the interpreter's teardown of torch
  and of a CUDA context holding the judge's cases, which the OS releases at once.

Both only when the process is the command itself, never when a test imports the CLI.
"""

from __future__ import annotations

import os
import sys


def run_as_command() -> bool:
    """This process is ``kernellab ...`` or ``python -m kernellab.cli.main ...``."""
    return bool(sys.argv) and sys.argv[0].endswith(("kernellab", os.path.join("cli", "main.py")))


def start_fork_server_early(argv: list[str]) -> None:
    """For ``eval`` only. Whether candidates run under the Triton interpreter decides the server's
    environment and is guessed here without torch (``--device``, else whether an NVIDIA device node
    exists); a wrong guess costs an unused server, killed at exit, and nothing else."""
    if argv[1:2] != ["eval"] or "--help" in argv:
        return
    from kernellab.sandbox.forkserver import server_env, shared_server

    shared_server(server_env(interpret=not _gpu_expected(argv)), wait=False)


def _gpu_expected(argv: list[str]) -> bool:
    for i, arg in enumerate(argv):
        if arg == "--device" and i + 1 < len(argv):
            return argv[i + 1] == "cuda"
        if arg.startswith("--device="):
            return arg.split("=", 1)[1] == "cuda"
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return os.path.exists("/dev/nvidiactl")


def leave(code: int) -> None:
    """Exit with ``code`` now, the fork servers stopped and the output flushed (see the module's
    docstring); in a process that only imported the CLI, an ordinary exit."""
    if not run_as_command():
        raise SystemExit(code)
    import logging

    from kernellab.sandbox.forkserver import close_shared_servers

    close_shared_servers()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)

