"""The judge's handle on one candidate child: requests with deadlines, and a diagnosis when it dies.

A child that hangs is killed with its whole process group; one that dies (segfault, ``os._exit``,
an OOM kill) is described from its exit status and the tail of its log. Either way the caller gets a
``ChildFailure`` with one readable line, and the session starts a fresh child for the next candidate.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import secrets
import select
import signal
import socket
import sysconfig
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernellab.sandbox.channel import KEY_BYTES, Channel, ChannelClosed, ChannelTimeout, ForgedMessage, ProtocolError
from kernellab.sandbox.forkserver import ForkServer
from kernellab.sandbox.guard import LINE_PREFIX, VIOLATION_OF_STATUS
from kernellab.sandbox.processes import Unsettled, kill_descendants, settled_live_children
from kernellab.sandbox.requests import ChildRequest

_SIGNAL_WORDS = {signal.SIGSEGV: "segmentation fault", signal.SIGABRT: "abort", signal.SIGKILL: "killed",
                 signal.SIGBUS: "bus error", signal.SIGFPE: "floating-point exception",
                 signal.SIGILL: "illegal instruction"}


class ChildFailure(RuntimeError):
    """The child died, hung or spoke out of protocol. ``reason`` is one of: died, timeout, protocol.

    ``violation`` names what the child's death proves, as a ``ViolationKind`` value: the guard ended
    it (``process_escape``, ``timer_tamper``: ``sandbox.guard``), or a message on the channel was not
    the harness's answer (``process_escape``)."""

    def __init__(self, reason: str, message: str, exitcode: int | None = None, violation: str | None = None):
        super().__init__(message)
        self.reason = reason
        self.exitcode = exitcode  # set when the child exited by itself (0: it ended its own process)
        self.violation = violation


class CandidateError(RuntimeError):
    """The candidate's code raised inside the child; the child itself is still healthy. The message
    names where in the candidate's own code it raised (``kernel.py:12 in forward``), found in the
    child's traceback, so that a user or an agent need not dig the traceback out of a log."""

    def __init__(self, reply: dict[str, Any]):
        self.exc_type = reply.get("exc_type", "")
        self.traceback = reply.get("traceback", "") if isinstance(reply.get("traceback"), str) else ""
        self.where = candidate_frame(self.traceback)
        message = reply.get("error") or "candidate raised"
        super().__init__(f"{message} (at {self.where})" if self.where else message)
        # The harness's name for a known interpreter gap (``interpreter_gap.GAPS``), found from the
        # traceback in the child; never read from the exception's text.
        self.interpreter_gap = reply.get("interpreter_gap")


_FRAME = re.compile(r'^\s*File "([^"\n]+)", line (\d+), in ([^\n]+)$', re.M)


@functools.cache
def _library_dirs() -> tuple[str, ...]:
    """Where code that is not the candidate's lives: the standard library, installed packages
    (torch, triton) and kernellab itself."""
    import kernellab

    dirs = {os.path.realpath(p) for key, p in sysconfig.get_paths().items()
            if key in ("stdlib", "platstdlib", "purelib", "platlib")}
    dirs.add(os.path.realpath(os.path.dirname(kernellab.__file__)))
    return tuple(d + os.sep for d in sorted(dirs))


def candidate_frame(traceback_text: str) -> str | None:
    """``file.py:LINE in FUNCTION`` of the innermost frame of a traceback that lies outside the
    libraries (the candidate's own code, also its Triton kernels under the interpreter); None when
    every frame is a library's. Text only: the traceback came from the candidate's process."""
    found = None
    for path, line, function in _FRAME.findall(traceback_text):
        if path.startswith("<") or os.path.realpath(path).startswith(_library_dirs()):
            continue
        found = f"{os.path.basename(path)}:{line} in {function.strip()}"
    return found


@dataclass
class ChildSpec:
    device: str  # "cuda" | "cpu"
    interpret: bool
    env: dict[str, str]
    log_path: Path
    memory_fraction: float | None = None
    fp32_precision: str = "ieee"


class CandidateProcess:
    def __init__(self, server: ForkServer, spec: ChildSpec, start_timeout: float = 120.0):
        self.spec = spec
        self.server = server
        judge_end, child_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        # The harness signs its answers with this key: any other code in the child can write to the
        # channel (and read the requests' tokens from it), none can sign.
        key = secrets.token_bytes(KEY_BYTES)
        payload = {"device": spec.device, "interpret": spec.interpret, "env": spec.env,
                   "log_path": str(spec.log_path), "memory_fraction": spec.memory_fraction,
                   "fp32_precision": spec.fp32_precision, "channel_key": key.hex()}
        self.pid = server.spawn(payload, child_end.fileno())
        child_end.close()
        self.channel = Channel(judge_end, verifying=key)
        self.dead: str | None = None
        self.token: str | None = None  # the request waiting for its answer, which must echo it
        self.busy = False  # a request was sent and its answer not yet read (the child may be running it)
        self.compile_seconds = 0.0  # JIT compile time the child reported, summed over requests
        # op -> [requests, seconds the judge waited, seconds the child spent in the op]: where an
        # evaluation's time goes (the difference is transport: pickling and CUDA IPC mapping).
        self.op_stats: dict[str, list[float]] = {}
        hello = self._receive(start_timeout)
        if not hello.get("ok"):
            self.kill()
            raise ChildFailure("died", f"the sandbox could not start: {hello.get('error')}")
        unconfined = hello.get("unconfined")
        self.unconfined: str | None = unconfined if isinstance(unconfined, str) else None  # why it may write anywhere

    def ask(self, request: ChildRequest, timeout: float) -> Any:
        """Send one typed request; return its value, raise CandidateError or ChildFailure."""
        return self.request(request.op, timeout, **request.arguments())

    def send(self, request: ChildRequest) -> float:
        """``submit`` a typed request (``collect`` its answer with ``request.op``)."""
        return self.submit(request.op, **request.arguments())

    def request(self, op: str, timeout: float, **kwargs: Any) -> Any:
        """Send one request as raw keywords (the protocol tests' way; the evaluator uses ``ask``)."""
        started = self.submit(op, **kwargs)
        return self.collect(op, started, timeout)

    def submit(self, op: str, **kwargs: Any) -> float:
        """Send a request without waiting for its answer (``collect`` it later); returns when it was sent."""
        if self.dead:
            raise ChildFailure("died", self.dead)
        started = time.perf_counter()
        # A token per request, echoed by the harness: bytes the candidate writes to the channel's
        # file descriptor itself (it can: the descriptor is in its process) are not an answer.
        self.token = secrets.token_hex(16)
        try:
            self.channel.send({"op": op, "token": self.token, **kwargs})
        except ChannelClosed:
            raise self._failure("died") from None
        self.busy = True
        return started

    def answered(self) -> bool:
        """An answer is waiting to be collected (or the child has gone)."""
        return self.dead is not None or bool(select.select([self.channel.sock], [], [], 0)[0])

    def collect(self, op: str, started: float, timeout: float) -> Any:
        """The answer to the request ``submit`` sent at ``started``."""
        reply = self._receive(timeout)
        self.busy = False
        stats = self.op_stats.setdefault(op, [0, 0.0, 0.0])
        stats[0] += 1
        stats[1] += time.perf_counter() - started
        if isinstance(reply, dict) and isinstance(reply.get("seconds"), float):
            stats[2] += reply["seconds"]
        if not isinstance(reply, dict) or "ok" not in reply:
            self.kill()
            raise ChildFailure("protocol", "the candidate process answered out of protocol")
        if reply.get("token") != self.token:
            self.kill()
            if reply.get("exc_type") == "HarnessError" and reply.get("token") is None:
                self.dead = f"the harness could not read the request: {reply.get('error')}"
                raise ChildFailure("harness", self.dead)
            self.dead = "the candidate process sent a message on the channel that is not the harness's answer"
            raise ChildFailure("protocol", self.dead, violation="process_escape")
        self._no_process_left("after its call")
        compile_s = reply.get("compile_s")
        if isinstance(compile_s, float) and 0 <= compile_s < 1e5:
            self.compile_seconds += compile_s
        if not reply["ok"]:
            raise CandidateError(reply)
        return reply.get("value")

    def _receive(self, timeout: float) -> Any:
        try:
            return self.channel.recv(timeout)
        except ChannelTimeout:
            self.kill()
            self.dead = f"no answer within {timeout:.0f} s (killed: infinite loop or hang)"
            raise ChildFailure("timeout", self.dead) from None
        except ChannelClosed:
            raise self._failure("died") from None
        except ForgedMessage:
            self.kill()
            self.dead = "the candidate process sent a message on the channel that is not the harness's answer (unsigned)"
            raise ChildFailure("protocol", self.dead, violation="process_escape") from None
        except ProtocolError as exc:
            self.kill()
            self.dead = f"the candidate process sent a malformed message ({exc})"
            raise ChildFailure("protocol", self.dead) from None

    def _failure(self, reason: str) -> ChildFailure:
        self.dead, exitcode = self._diagnose()
        self.kill()
        violation = VIOLATION_OF_STATUS.get(exitcode) if exitcode is not None else None
        if violation is not None:
            # The guard's line says what the candidate reached for; the status alone says that it did.
            self.dead = self.guard_line() or f"the sandbox guard ended the candidate process ({violation})"
        return ChildFailure(reason, self.dead, exitcode, violation)

    def guard_line(self) -> str:
        """The guard's last line in the child's log, without its prefix ('' if there is none)."""
        try:
            text = self.spec.log_path.read_text(errors="replace")
        except OSError:
            return ""
        lines = [ln for ln in text.splitlines() if ln.startswith(LINE_PREFIX)]
        return lines[-1][len(LINE_PREFIX):].strip()[:500] if lines else ""

    def _diagnose(self) -> tuple[str, int | None]:
        status = None
        for _ in range(40):  # the server reaps on its own clock
            status = self.server.status(self.pid) if self.server.alive() else None
            if status is not None:
                break
            time.sleep(0.05)
        tail = self.log_tail()
        if status is None:
            what = "the candidate process closed its channel"
        elif "signal" in status:
            sig = signal.Signals(status["signal"])
            what = f"the candidate process was killed by {sig.name} ({_SIGNAL_WORDS.get(sig, 'signal')})"
        else:
            what = f"the candidate process exited early with status {status['exitcode']}"
        exitcode = status.get("exitcode") if status else None
        return f"{what}{': ' + tail if tail else ''}", exitcode

    def log_tail(self, lines: int = 3) -> str:
        try:
            text = self.spec.log_path.read_text(errors="replace")
        except OSError:
            return ""
        interesting = [ln.strip() for ln in text.splitlines() if ln.strip()]
        errors = [ln for ln in interesting if "Error" in ln or "error" in ln]
        chosen = errors[-1:] if errors else interesting[-lines:]
        return " | ".join(chosen)[:400]

    def kill(self) -> None:
        kill_descendants(self.pid)  # those that left the process group too
        self.send_signal(signal.SIGKILL)
        self.channel.close()

    def _no_process_left(self, when: str) -> None:
        """A process of the candidate's own still running ends the evaluation (``processes``)."""
        try:
            left = settled_live_children(self.pid)
        except Unsettled:
            self.kill()
            self.dead = (f"a process of the candidate's own was still starting or ending processes {when}: "
                         f"they would run beside the judge's timing")
            raise ChildFailure("escape", self.dead, violation="process_escape") from None
        if left:
            self.kill()
            self.dead = (f"the candidate left {len(left)} process(es) of its own running {when} "
                         f"({', '.join(map(str, left[:3]))}): they would run beside the judge's timing")
            raise ChildFailure("escape", self.dead, violation="process_escape")

    @contextlib.contextmanager
    def stopped(self, during: str = "while the judge timed the baselines") -> Iterator[None]:
        """The candidate's process, every thread of it, stopped for the block: the judge times its
        baselines on the same GPU meanwhile (or another evaluation times its own), and a thread the
        candidate left behind (a native pool's, which no thread count sees) could load the GPU then
        and slow them. Work it queued on the GPU before the stop still runs."""
        self.send_signal(signal.SIGSTOP)
        try:
            # Stopped, it starts nothing more; a process it started after its last answer (from a
            # thread no count sees, in a session of its own that the group's stop misses) is here now.
            self._no_process_left(during)
            yield
        finally:
            self.send_signal(signal.SIGCONT)

    def send_signal(self, sig: int) -> None:
        """Send ``sig`` to the child's whole process group (SIGSTOP/SIGCONT pause and resume it)."""
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def close(self) -> None:
        """Ask the child to let go of the judge's memory and exit; killed at once instead when it is
        still running a request whose answer nobody will read (an interrupted evaluation: a candidate
        that hangs would otherwise hold the caller for the 30 s the polite exit waits)."""
        # Its processes first, while it lives: once it has exited, one it started after its last
        # answer (in a session of its own) would be the fork server's orphan, and outlive the server.
        kill_descendants(self.pid)
        if not self.dead and not self.busy:
            try:
                self.channel.send({"op": "exit"})  # the child lets go of the judge's memory, then answers
                self.channel.recv(30)
            except (ChannelClosed, ChannelTimeout, ProtocolError):
                pass
        self.kill()
        import torch  # loaded already: the judge made what it sent

        if self.spec.device == "cuda" and torch.cuda.is_initialized():
            # Blocks the child held are freed only once collected (a killed child never lets go of
            # what it held: those stay with this process, a limit of torch's CUDA IPC).
            torch.cuda.ipc_collect()
