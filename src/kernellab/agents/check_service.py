"""The check service: agent-side checks answered by the orchestrator's warm evaluator.

A confined agent sees neither kernellab nor torch's installation, so the workspace's ``check`` is a
standard-library script (``CHECK_SCRIPT``) that talks to a ``CheckService`` over a Unix socket:

    request   one JSON line   {"profile": false}
    answer    one JSON line   {"exit_code": 0 | 1 | 2, "feedback": "<text>", "verdict": {...} | null}

The service evaluates the workspace's current kernel.py against the public task (holdout configs
removed, seen + edge + small configs only), one check at a time per workspace, under a timeout, and
records every check as one JSON line in its own log folder, outside the workspace, so a trajectory
includes the checks an agent ran. With no service listening, ``check`` runs ``kernellab check``
where kernellab is importable, and otherwise says what is missing.
"""

from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import logging
import os
import selectors
import shutil
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from kernellab.agents.feedback import (
    ProfileSummary,
    collect_profile,
    format_feedback,
    ncu_summary,
    public_verdict,
    verdict_summary,
)
from kernellab.agents.workspace import (
    Workspace,
    WorkspaceError,
    load_workspace,
    public_task,
    write_task_folder,
)
from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Verdict
from kernellab.tasks.model import Task, TaskError

log = logging.getLogger(__name__)

SOCKET_ENV = "KERNELLAB_CHECK_SOCKET"
ENDPOINT_FILE = "check.json"  # in .kernellab/: where the service listens and its timeout
MAX_KERNEL_BYTES = 1 << 20
MAX_REQUEST_BYTES = 1 << 16
_SUN_PATH_MAX = 100  # sockaddr_un holds 108 bytes; longer paths are bound through /proc/self/fd


# ------------------------------------------------------------------------------------ checking


@dataclass
class CheckReport:
    verdict: Verdict
    feedback: str
    kernel_sha256: str
    profile: ProfileSummary | None = None

    @property
    def exit_code(self) -> int:
        return 0 if self.verdict.status.value == "passed" else 1

    def answer(self) -> dict[str, Any]:
        return {"exit_code": self.exit_code, "feedback": self.feedback, "verdict": public_verdict(self.verdict)}


class Checker:
    """A warm evaluator of one task's public configs: what ``check`` runs, in or out of a service.

    The task's holdout configs are removed before anything else sees it, and the options always ask
    for seen configs only (seen, edge and small; on the CPU the small ones carry the checks). The
    ``sanitize`` stage is left to the final verdict: it adds about 7 s per check on an H100.
    """

    def __init__(self, task: Task, options: EvalOptions | None = None):
        self.task = public_task(task)
        options = options or EvalOptions()
        self.options = dataclasses.replace(options, configs="seen", time_holdout=False, sanitize=False)
        self.session = EvalSession(self.task, self.options)
        self._task_copy: Path | None = None

    def check(self, kernel: Path, *, profile: bool = False) -> CheckReport:
        source = Path(kernel).read_bytes()
        verdict = self.session.evaluate(kernel)
        summary = None
        ncu = None
        if profile and verdict.compiled and verdict.mode.value != "compile-only":
            summary = collect_profile(self.session, Path(kernel))
            ncu = ncu_summary(self.session, Path(kernel), self._task_path())
        text = format_feedback(verdict, task_id=self.task.id, profile=summary, ncu=ncu)
        return CheckReport(verdict, text, hashlib.sha256(source).hexdigest(), summary)

    def _task_path(self) -> Path:
        """A loadable copy of the public task (for tools that run outside the session, e.g. ncu)."""
        if self._task_copy is None:
            self._task_copy = write_task_folder(self.task, self.session.work_dir / "public-task")
        return self._task_copy

    def close(self) -> None:
        self.session.close()


# ------------------------------------------------------------------------------------ the service


class CheckService:
    """Serves ``check`` requests for one workspace on a Unix socket, from a thread of this process.

    ``log_dir`` (outside the workspace) receives ``checks.jsonl`` and a copy of every kernel checked
    (``kernels/<sha256>.py``). ``bind_paths`` are what a confinement must bind for the socket to be
    reachable (nothing when it lies in the workspace); ``env`` is what to add to the agent's environment.
    """

    def __init__(self, task: Task, workspace: Workspace | Path, log_dir: Path, *, options: EvalOptions | None = None,
                 timeout_s: float = 900.0, socket_path: Path | None = None):
        self.workspace = workspace if isinstance(workspace, Workspace) else load_workspace(Path(workspace))
        if task.id != self.workspace.task_id:
            raise WorkspaceError(f"workspace {self.workspace.path} is for task {self.workspace.task_id}, not {task.id}")
        self.log_dir = Path(log_dir).resolve()
        if self.log_dir == self.workspace.path or self.workspace.path in self.log_dir.parents:
            raise WorkspaceError(f"the check log folder {self.log_dir} must lie outside the workspace "
                                 f"{self.workspace.path}")
        if timeout_s <= 0:
            raise WorkspaceError(f"check timeout must be positive, not {timeout_s}")
        self.timeout_s = float(timeout_s)
        options = options or EvalOptions()
        options = dataclasses.replace(options, request_timeout_s=min(options.request_timeout_s, self.timeout_s),
                                      compile_timeout_s=min(options.compile_timeout_s, self.timeout_s))
        self.task = task
        self._options = options
        self.socket_path = Path(socket_path).resolve() if socket_path else self.workspace.socket_path
        self.log_path = self.log_dir / "checks.jsonl"
        self.checks = 0
        self._checker: Checker | None = None
        self._busy = threading.Lock()  # one evaluation at a time; released by the worker when it ends
        self._log_lock = threading.Lock()
        self._stop = threading.Event()
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._snapshots: Path | None = None

    # -------------------------------------------------------------------------------- lifecycle

    @property
    def bind_paths(self) -> list[Path]:
        inside = self.workspace.path in self.socket_path.parents
        return [] if inside else [self.socket_path.parent]

    @property
    def env(self) -> dict[str, str]:
        return {SOCKET_ENV: str(self.socket_path)}

    def start(self) -> CheckService:
        if self._thread is not None:
            return self
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._snapshots = Path(tempfile.mkdtemp(prefix="kernellab-checks-"))
        self._checker = Checker(self.task, self._options)
        self._listener = _listen(self.socket_path)
        endpoint = self.workspace.state_dir / ENDPOINT_FILE
        endpoint.write_text(json.dumps({"socket": str(self.socket_path), "timeout_s": self.timeout_s}) + "\n")
        self._thread = threading.Thread(target=self._serve, name=f"check-service {self.task.id}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        for path in (self.socket_path, self.workspace.state_dir / ENDPOINT_FILE):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
        idle = self._busy.acquire(timeout=self.timeout_s)  # let a running evaluation end before its session
        try:
            if self._checker is not None:
                self._checker.close()
                self._checker = None
        finally:
            if idle:
                self._busy.release()
        if self._snapshots is not None:
            shutil.rmtree(self._snapshots, ignore_errors=True)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -------------------------------------------------------------------------------- one check

    def check_now(self, *, profile: bool = False) -> dict[str, Any]:
        """One check of the workspace's current kernel.py, answered as the socket would answer it."""
        if self._checker is None:
            raise WorkspaceError("the check service is not started")
        if not self._busy.acquire(timeout=self.timeout_s):
            return _refusal(f"another check of this workspace is still running after {self.timeout_s:.0f} s; "
                            f"try again later")
        try:
            source = self.workspace.kernel_path.read_bytes()
        except OSError as exc:
            self._busy.release()
            return _refusal(f"cannot read kernel.py in the workspace: {exc.strerror or exc}")
        if len(source) > MAX_KERNEL_BYTES:
            self._busy.release()
            return _refusal(f"kernel.py is {len(source)} bytes; a kernel file may have at most {MAX_KERNEL_BYTES}")
        self.checks += 1
        number = self.checks
        started, began = time.monotonic(), _now()
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["report"] = self._evaluate(number, source, profile)
            except (TaskError, OSError) as exc:
                box["error"] = f"the check could not run: {exc}"
            except Exception as exc:  # a defect of ours: the agent gets one line, the log the traceback
                log.exception("check %d of %s failed", number, self.task.id)
                box["error"] = f"the check failed inside kernellab: {type(exc).__name__}: {exc}"
            finally:
                try:
                    self._record(number, source, profile, box, began, time.monotonic() - started)
                except OSError:
                    log.exception("check %d of %s could not be recorded in %s", number, self.task.id, self.log_dir)
                finally:
                    self._busy.release()
                    done.set()

        threading.Thread(target=work, name=f"check {number}", daemon=True).start()
        if not done.wait(self.timeout_s):
            box["timed_out"] = True
            return {"exit_code": 1, "verdict": None,
                    "feedback": f"check {self.task.id}: TIMEOUT: no verdict within {self.timeout_s:.0f} s. The "
                                f"kernel may hang or compile for too long; the next check waits for this one.\n"}
        if "error" in box:
            return _refusal(box["error"])
        return box["report"].answer()

    def _evaluate(self, number: int, source: bytes, profile: bool) -> CheckReport:
        snapshot = self._snapshots / f"check-{number:04d}" / "kernel.py"  # the agent may edit kernel.py meanwhile
        snapshot.parent.mkdir()
        snapshot.write_bytes(source)
        return self._checker.check(snapshot, profile=profile)

    def _record(self, number: int, source: bytes, profile: bool, box: dict[str, Any], began: str,
                seconds: float) -> None:
        sha = hashlib.sha256(source).hexdigest()
        kept = self.log_dir / "kernels" / f"{sha}.py"
        record: dict[str, Any] = {
            "time": _now(), "started": began, "check": number, "task_id": self.task.id, "workspace": str(self.workspace.path), "kernel_sha256": sha,
            "kernel": str(kept), "profile": profile, "seconds": round(seconds, 3),
            "timed_out": seconds > self.timeout_s or bool(box.get("timed_out"))}
        report = box.get("report")
        record.update(verdict_summary(report.verdict) if report else {"status": "error", "error": box.get("error")})
        with self._log_lock:
            kept.parent.mkdir(exist_ok=True)
            if not kept.exists():
                kept.write_bytes(source)
            with open(self.log_path, "a") as f:
                f.write(json.dumps(record, default=str) + "\n")

    # -------------------------------------------------------------------------------- the socket

    def _serve(self) -> None:
        selector = selectors.DefaultSelector()
        selector.register(self._listener, selectors.EVENT_READ)
        while not self._stop.is_set():
            if not selector.select(timeout=0.2):
                continue
            try:
                conn, _ = self._listener.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()
        selector.close()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            try:
                request = _read_request(conn)
                answer = self.check_now(profile=request["profile"]) if isinstance(request, dict) else _refusal(request)
            except Exception as exc:
                log.exception("check request failed")
                answer = _refusal(f"the check failed inside kernellab: {type(exc).__name__}: {exc}")
            try:
                conn.sendall((json.dumps(answer, default=str) + "\n").encode())
            except OSError:
                pass  # the agent gave up waiting


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="milliseconds")


def _refusal(message: str) -> dict[str, Any]:
    return {"exit_code": 2, "feedback": f"check: {message}\n", "verdict": None}


def _read_request(conn: socket.socket) -> dict[str, Any] | str:
    """The request line, validated; a string says what is wrong with it."""
    conn.settimeout(30)
    data = b""
    try:
        while b"\n" not in data and len(data) < MAX_REQUEST_BYTES:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        return "the request did not arrive"
    conn.settimeout(None)
    try:
        request = json.loads(data.split(b"\n", 1)[0] or b"{}")
    except ValueError:
        return "the request is not one JSON line"
    if not isinstance(request, dict):
        return "the request must be a JSON object"
    unknown = sorted(set(request) - {"profile"})
    if unknown:
        return f"unknown request field {unknown[0]!r} (known: profile)"
    if not isinstance(request.get("profile", False), bool):
        return "profile must be true or false"
    return {"profile": request.get("profile", False)}


def _listen(path: Path) -> socket.socket:
    """A listening Unix socket at ``path``; paths longer than sockaddr_un allows are bound through
    the folder's /proc/self/fd entry, so a deep workspace still gets its socket where ``check`` looks."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if len(str(path)) <= _SUN_PATH_MAX:
        sock.bind(str(path))
    else:
        folder = os.open(path.parent, os.O_PATH)
        try:
            sock.bind(f"/proc/self/fd/{folder}/{path.name}")
        finally:
            os.close(folder)
    os.chmod(path, 0o600)
    sock.listen(8)
    sock.setblocking(False)
    return sock


# ------------------------------------------------------------------------------------ the client

# The workspace's `check`: standard library only, so it runs where kernellab and torch are not visible.
CHECK_SCRIPT = r'''#!/usr/bin/env python3
"""Check kernel.py in this folder: compile, correctness on seen, edge and small configs, timings.

    ./check [--profile] [--json]

Exit status: 0 passed, 1 failed, 2 the check could not run. Held-out configurations are never run here.
"""
import importlib.util
import json
import os
import shutil
import socket
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
STATE = os.path.join(HERE, ".kernellab")
USAGE = "usage: ./check [--profile] [--json]"


def endpoint():
    """The service's socket and timeout: the environment, else .kernellab/check.json, else the default."""
    timeout = 3600.0
    path = os.environ.get("KERNELLAB_CHECK_SOCKET")
    try:
        with open(os.path.join(STATE, "check.json")) as f:
            info = json.load(f)
        path = path or info.get("socket")
        timeout = float(info.get("timeout_s", timeout)) + 120.0
    except (OSError, ValueError, AttributeError, TypeError):
        pass
    return path or os.path.join(STATE, "check.sock"), timeout


def connect(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    if len(path) <= 100:
        sock.connect(path)
        return sock
    folder = os.open(os.path.dirname(path), os.O_RDONLY)
    try:
        sock.connect("/proc/self/fd/%d/%s" % (folder, os.path.basename(path)))
    finally:
        os.close(folder)
    return sock


def ask(path, timeout, profile):
    sock = connect(path)
    sock.settimeout(timeout)
    with sock:
        sock.sendall((json.dumps({"profile": profile}) + "\n").encode())
        data = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data.decode())


def main(argv):
    unknown = [a for a in argv if a not in ("--profile", "--json")]
    if unknown or "-h" in argv or "--help" in argv:
        print(USAGE, file=sys.stderr)
        return 2
    profile, as_json = "--profile" in argv, "--json" in argv
    path, timeout = endpoint()
    if os.path.exists(path) or os.environ.get("KERNELLAB_CHECK_SOCKET"):
        try:
            answer = ask(path, timeout, profile)
        except (ConnectionRefusedError, FileNotFoundError):
            answer = None  # a socket left behind by a service that has gone: check here instead
        except socket.timeout:
            print("check: the check service gave no answer within %.0f s" % timeout, file=sys.stderr)
            return 2
        except (OSError, ValueError) as exc:
            print("check: the check service could not be asked: %s" % exc, file=sys.stderr)
            return 2
        if answer is not None:
            if as_json:
                print(json.dumps(answer, indent=1))
            else:
                sys.stdout.write(answer.get("feedback", ""))
            return int(answer.get("exit_code", 2))
    args = ["check", "--workspace", HERE] + argv
    if importlib.util.find_spec("kernellab") is not None:
        os.execv(sys.executable, [sys.executable, "-m", "kernellab.cli.main"] + args)
    command = shutil.which("kernellab")
    if command:
        os.execv(command, [command] + args)
    print("check: no check service is listening at %s, and kernellab is not installed for %s: run "
          "`kernellab check` where kernellab is installed, or check from the orchestrator that made this "
          "workspace" % (path, sys.executable), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''
