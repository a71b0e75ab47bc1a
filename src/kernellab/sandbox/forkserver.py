"""The fork server: a process with torch and triton imported that has never touched CUDA.

Forking it gives a candidate child in milliseconds instead of the seconds a fresh interpreter needs
to import torch, while each child still starts clean: no monkeypatches, TF32 flags, threads or
caches from an earlier candidate. CUDA is initialised only in the child, after the fork, which is
why the server itself must never touch it.

Protocol on the server socket (one JSON line per request, answers likewise):
  {"op": "spawn", "spec": {...}}  + one file descriptor (the child's end of its channel) → {"pid": N}
  {"op": "status", "pid": N}     → {"status": None | {"exitcode": int} | {"signal": int}}
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from kernellab.sandbox.processes import become_subreaper, children_of, kill_descendants

log = logging.getLogger(__name__)

_PRELOAD = ("torch", "triton", "triton.language", "numpy")
# Imported when present, for children that would otherwise import them on their first profiled call
# or first Triton launch (about 2 s per candidate on an H100, measured with KERNELLAB_PROFILE_CHILD).
# None of them initialises CUDA, which must not happen before a fork.
_PRELOAD_OPTIONAL = ("torch.profiler", "torch._dynamo", "torch._higher_order_ops.triton_kernel_wrap",
                     "triton.compiler.compiler", "triton.runtime.build", "triton.backends.nvidia.compiler",
                     "triton.backends.nvidia.driver")


# What of the judge's environment reaches the fork server and each candidate child; nothing else does.
ENV_KEEP = ("PATH", "LANG", "LC_ALL", "CUDA_VISIBLE_DEVICES", "CUDA_HOME", "CUDA_PATH", "LD_LIBRARY_PATH",
            "TRITON_PTXAS_PATH", "CC", "CXX", "NCCL_NVLS_ENABLE", "TORCH_SYMM_MEM_DISABLE_MULTICAST",
            "NVSHMEM_DISABLE_NVLS", "TORCH_CUDA_ARCH_LIST",
            "KERNELLAB_PROFILE_CHILD")  # a folder: children write a cProfile table of their requests there


def _warm_triton_key() -> None:
    """Triton keys every compile and cache lookup by a hash of its own source files, computed once
    per process (``functools.lru_cache``): ~0.4 s of a child's first compile on an H200. Computed
    here, before forking, every child inherits it. Pure file hashing: no CUDA, nothing of a candidate's."""
    try:
        from triton.runtime.cache import triton_key
    except ImportError:  # another Triton layout: the child computes it on its first compile
        return
    triton_key()


class ForkServerError(RuntimeError):
    pass


def with_this_kernellab(env: dict[str, str]) -> dict[str, str]:
    """``env`` with this process's kernellab first on ``PYTHONPATH``: the server must import the
    judge's own code, installed or not (a checkout run with ``PYTHONPATH=src``)."""
    here = str(Path(__file__).resolve().parents[2])
    paths = [here] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != here]
    return {**env, "PYTHONPATH": os.pathsep.join(paths)}


class ForkServer:
    """The judge's handle on the fork server process."""

    def __init__(self, env: dict[str, str], log_path: Path, wait: bool = True):
        """Start the server; ``wait=False`` returns at once and the first request waits for it to be
        ready (its imports take seconds, which the judge can spend on its own start meanwhile)."""
        self._lock = threading.Lock()
        parent, child = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self._log = open(log_path, "ab")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kernellab.sandbox.forkserver", str(child.fileno())],
            pass_fds=[child.fileno()], env=with_this_kernellab(env), stdin=subprocess.DEVNULL, stdout=self._log,
            stderr=subprocess.STDOUT, start_new_session=True)
        child.close()
        self.sock = parent
        self._reader = parent.makefile("rb")
        self._ready = False
        if wait:
            self.wait_ready()

    def wait_ready(self) -> None:
        with self._lock:
            self._wait_ready_locked()

    def _wait_ready_locked(self) -> None:
        if self._ready:
            return
        ready = self._read_line(timeout=120)
        if ready.get("ready") is not True:
            raise ForkServerError(f"fork server failed to start: {ready}")
        self._ready = True

    def spawn(self, spec: dict[str, Any], child_fd: int) -> int:
        with self._lock:
            self._wait_ready_locked()
            message = (json.dumps({"op": "spawn", "spec": spec}) + "\n").encode()
            socket.send_fds(self.sock, [message], [child_fd])
            return int(self._read_line(timeout=60)["pid"])

    def status(self, pid: int) -> dict[str, int] | None:
        with self._lock:
            self._wait_ready_locked()
            self.sock.sendall((json.dumps({"op": "status", "pid": pid}) + "\n").encode())
            return self._read_line(timeout=30)["status"]

    def _read_line(self, timeout: float) -> dict[str, Any]:
        if not select.select([self.sock], [], [], timeout)[0]:
            raise ForkServerError("fork server did not answer")
        line = self._reader.readline()
        if not line:
            raise ForkServerError(f"fork server exited (status {self.proc.poll()})")
        return json.loads(line)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
        if self.proc.poll() is None:
            kill_descendants(self.proc.pid)  # its children, and orphans in sessions of their own
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        self._log.close()


_SHARED: dict[tuple, ForkServer] = {}

# Variables torch itself writes into the judge's os.environ: Inductor points TRITON_PTXAS_PATH at
# torch's own ptxas when it first compiles (a torch.compile baseline). Children see the value the judge
# started with. Otherwise the candidates after the first baseline compile get another ptxas than the
# ones before, and the fork server's environment changes: on an H100 the second evaluation of a
# session waited 2.3 s for a second fork server to start.
_WRITTEN_BY_TORCH = ("TRITON_PTXAS_PATH",)
_AT_START = {k: os.environ.get(k) for k in _WRITTEN_BY_TORCH}


def hold_ptxas() -> None:
    """One ptxas for the judge and its children, from now on: Triton's own where the judge was started
    without ``TRITON_PTXAS_PATH``, set before Inductor's first compile would point it at torch's. The
    judge compiles each own Triton kernel of a candidate again and compares binaries; another ptxas
    (and Triton's per-process cache of its version) makes another binary, and every candidate after
    the first ``torch.compile`` baseline was refused its own kernels (seen on an H200)."""
    if os.environ.get("TRITON_PTXAS_PATH") is not None:
        return
    try:
        from triton import knobs

        path = knobs.nvidia.ptxas.path
    except Exception:  # noqa: BLE001 - no Triton, an older layout, or no ptxas: nothing to hold
        return
    os.environ["TRITON_PTXAS_PATH"] = path
    if _AT_START.get("TRITON_PTXAS_PATH") is None:
        _AT_START["TRITON_PTXAS_PATH"] = path


def kept_env(extra: tuple[str, ...] = ()) -> dict[str, str]:
    """What of the judge's environment a fork server and its children get (``ENV_KEEP`` and
    ``extra``): the values now, except those torch writes itself, which keep the judge's first ones."""
    keys = ENV_KEEP + extra
    env = {k: os.environ[k] for k in keys if k in os.environ}
    for key, value in _AT_START.items():
        env.pop(key, None)
        if value is not None and key in keys:
            env[key] = value
    return env


def server_env(interpret: bool) -> dict[str, str]:
    """The fork server's environment: what the children keep of the judge's, and the interpreter flag
    (Triton reads it when imported, so the server is started with it)."""
    env = kept_env(("PYTHONPATH",))
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    return env


def shared_server(env: dict[str, str], wait: bool = True) -> ForkServer:
    """One fork server per environment for the whole process: sessions come and go (a campaign opens
    one per task), a fork server costs seconds to start, and children never inherit its state.
    ``wait=False`` starts it without waiting for it (see ``ForkServer``)."""
    key = tuple(sorted(env.items()))
    server = _SHARED.get(key)
    if server is None or not server.alive():
        import atexit
        import tempfile

        log_dir = Path(tempfile.mkdtemp(prefix="kernellab-forkserver-"))
        server = _SHARED[key] = ForkServer(env, log_dir / "forkserver.log", wait=False)
        atexit.register(server.close)
    if wait:
        server.wait_ready()
    return server


def close_shared_servers() -> None:
    """Stop every shared server now (they run in their own session: a process that leaves with
    ``os._exit`` skips the atexit hooks that would stop them)."""
    while _SHARED:
        _SHARED.popitem()[1].close()


# ---------------------------------------------------------------------------------------- server side


def _kill_orphans(spawned: set[int]) -> None:
    """Any child of the server that it did not fork itself is an escaped descendant of a candidate."""
    for pid in children_of(os.getpid()):
        if pid not in spawned:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def _serve(fd: int) -> None:
    for name in _PRELOAD:
        __import__(name)
    for name in _PRELOAD_OPTIONAL:
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - an optional warm-up; the child imports what it needs itself
            pass
    _warm_triton_key()
    import kernellab.sandbox.child  # noqa: F401  (imported before forking: children start warm)
    from kernellab.sandbox import guard

    guard.prepare()  # what every child's guard verifies, recorded once here (~0.1 s) and shared

    sock = socket.socket(fileno=fd)
    statuses: dict[int, dict[str, int]] = {}
    spawned: set[int] = set()
    subreaper = become_subreaper()
    sock.sendall(b'{"ready": true}\n')
    buffer = b""
    while True:
        _reap(statuses)
        if subreaper:
            _kill_orphans(spawned)
        readable = select.select([sock], [], [], 0.5)[0]
        if not readable:
            continue
        data, fds, _, _ = socket.recv_fds(sock, 1 << 20, 4)
        if not data:  # the judge is gone (killed, or it closed us): nothing of its evaluations may stay
            kill_descendants(os.getpid())
            return
        buffer += data
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            request = json.loads(line)
            if request["op"] == "spawn":
                pid = _fork_child(sock, fds.pop(0), request["spec"])
                spawned.add(pid)
                sock.sendall((json.dumps({"pid": pid}) + "\n").encode())
            elif request["op"] == "status":
                _reap(statuses)
                sock.sendall((json.dumps({"status": statuses.get(request["pid"])}) + "\n").encode())


def _reap(statuses: dict[int, dict[str, int]]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if os.WIFSIGNALED(status):
            statuses[pid] = {"signal": os.WTERMSIG(status)}
        else:
            statuses[pid] = {"exitcode": os.waitstatus_to_exitcode(status)}


def _fork_child(server_sock: socket.socket, child_fd: int, spec: dict[str, Any]) -> int:
    pid = os.fork()
    if pid:
        os.close(child_fd)
        return pid
    # In the child: never return into the server loop, whatever happens.
    code = 70
    try:
        server_sock.close()
        os.setsid()
        # Orphans of the candidate's processes stay the child's, where the judge looks for them
        # after every answer (``processes``).
        become_subreaper()
        from kernellab.sandbox import child

        code = child.main(child_fd, spec)
    except BaseException:  # noqa: BLE001 - report and leave
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def main(argv: list[str]) -> None:
    _serve(int(argv[1]))


if __name__ == "__main__":
    main(sys.argv)
