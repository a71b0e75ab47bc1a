"""A chain of processes, each starting the next in a session of its own and exiting at once: at any
moment one of them lives, yet a single read of the children lists it and finds it gone by the time
its state is read. Real processes (``/bin/sh``), a real subreaper standing in for the sandbox child."""

from __future__ import annotations

import os
import time

from kernellab.sandbox.processes import Unsettled, become_subreaper, kill_descendants, settled_live_children

HOP = ('N=$((N-1)); [ $N -le 0 ] && exit 0; [ -e "$STOP" ] && exit 0; echo $$ >> "$LOG"; '
       'N=$N /bin/sh -c "$HOP" & exit 0')


def _start_chain(tmp_path) -> int:
    """A stand-in child (own session, subreaper, reaping what is re-parented to it, as a candidate
    may) that starts one chain of at most 20000 hops."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setsid()
            become_subreaper()
            os.posix_spawn("/usr/bin/setsid", ["/usr/bin/setsid", "/bin/sh", "-c", HOP],
                           {"HOP": HOP, "N": "20000", "PATH": "/usr/bin:/bin", "LOG": str(tmp_path / "log"),
                            "STOP": str(tmp_path / "stop")})
            end = time.monotonic() + 30
            while time.monotonic() < end:
                try:
                    while os.waitpid(-1, os.WNOHANG)[0]:
                        pass
                except ChildProcessError:
                    pass
                time.sleep(0.01)
        finally:
            os._exit(0)
    return pid


def _hopping(log) -> bool:
    before = log.stat().st_size if log.exists() else 0
    time.sleep(0.3)
    return (log.stat().st_size if log.exists() else 0) > before


def test_a_chain_of_short_lived_processes_is_seen_and_killed(tmp_path):
    pid = _start_chain(tmp_path)
    log = tmp_path / "log"
    try:
        assert _hopping(log), "the chain did not start"
        for _ in range(10):
            try:
                seen = bool(settled_live_children(pid))
            except Unsettled:
                seen = True
            assert seen, "a read of the children missed the chain"
        kill_descendants(pid)
        time.sleep(0.3)
        assert not _hopping(log), "the chain outlived kill_descendants"
    finally:
        (tmp_path / "stop").write_text("")
        os.kill(pid, 9)
        os.waitpid(pid, 0)


def test_a_process_without_children_reads_settled_at_once():
    import subprocess

    quiet = subprocess.Popen(["sleep", "30"])
    try:
        started = time.perf_counter()
        assert settled_live_children(quiet.pid) == []
        assert time.perf_counter() - started < 0.5
    finally:
        quiet.kill()
        quiet.wait()
