"""The tools the model works the workspace with: read a file, write the kernel, run the check, finish.

Reads are confined to the workspace: absolute paths and paths that resolve outside it (``..``, or a
symbolic link pointing out) are refused. ``run_check`` runs the workspace's own ``check`` executable
(which prints compact feedback on seen and edge configs) in a new process group that is killed whole
on timeout, without the model endpoint's API key in its environment.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from kernellab.agents.llm.conversation import ToolCall, ToolResult, ToolSpec

KERNEL_FILE = "kernel.py"
CHECK_COMMAND = "check"
MAX_READ_CHARS = 100_000  # a reference or a kernel fits; a stray binary does not flood the context
MAX_OUTPUT_CHARS = 20_000  # check output kept for the model: its head and its tail
MAX_KERNEL_CHARS = 500_000

TOOL_SPECS: list[ToolSpec] = [
    ToolSpec("read_file", "Read a text file of the workspace (e.g. TASK.md, reference.py, kernel.py). "
             "A directory path lists its entries.",
             {"type": "object", "properties": {"path": {"type": "string", "description":
                                                        "path relative to the workspace"}},
              "required": ["path"]}),
    ToolSpec("write_kernel", "Replace kernel.py with this complete Python source (class ModelNew).",
             {"type": "object", "properties": {"source": {"type": "string", "description":
                                                          "the whole new kernel.py"}},
              "required": ["source"]}),
    ToolSpec("run_check", "Compile kernel.py and check it against the reference on the task's seen and edge "
             "configurations; prints compact feedback (correctness, errors, and speed). With profile=true "
             "also prints a profile of the kernels that ran.",
             {"type": "object", "properties": {"profile": {"type": "boolean", "default": False}}}),
    ToolSpec("finish", "End the session: kernel.py as it is now is your answer.",
             {"type": "object", "properties": {"summary": {"type": "string", "description":
                                                           "what the kernel does and how it was made fast"}},
              "required": ["summary"]}),
]


class ToolRefused(Exception):
    """A tool call that cannot be carried out; its message goes back to the model."""


class WorkspaceTools:
    def __init__(self, workspace: Path, *, check_timeout_s: float, hidden_env: tuple[str, ...] = ()) -> None:
        self.root = workspace.resolve()
        self.check_timeout_s = check_timeout_s
        self.hidden_env = hidden_env
        self.kernel_writes = 0
        self.checks = 0
        self.summary: str | None = None  # set by finish

    @property
    def finished(self) -> bool:
        return self.summary is not None

    def run(self, call: ToolCall, deadline: float | None = None) -> ToolResult:
        if call.arguments is None:
            return ToolResult(call.id, call.name, f"the arguments of {call.name} are not a JSON object: "
                              f"{call.raw_arguments[:200]!r}", is_error=True)
        handler = getattr(self, f"_tool_{call.name}", None)
        if handler is None:
            known = ", ".join(t.name for t in TOOL_SPECS)
            return ToolResult(call.id, call.name, f"no tool named {call.name!r}; the tools are {known}",
                              is_error=True)
        try:
            return ToolResult(call.id, call.name, handler(call.arguments, deadline))
        except ToolRefused as exc:
            return ToolResult(call.id, call.name, str(exc), is_error=True)

    # -- the tools --------------------------------------------------------------------------------

    def _tool_read_file(self, args: dict[str, Any], deadline: float | None) -> str:
        path = self.confine(_string(args, "path"))
        if path.is_dir():
            entries = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
            return "\n".join(entries) or "(empty directory)"
        if not path.is_file():
            raise ToolRefused(f"{args['path']}: no such file in the workspace")
        text = path.read_bytes().decode("utf-8", errors="replace")
        if len(text) > MAX_READ_CHARS:
            return text[:MAX_READ_CHARS] + f"\n[... cut: the file has {len(text)} characters]"
        return text

    def _tool_write_kernel(self, args: dict[str, Any], deadline: float | None) -> str:
        source = _string(args, "source")
        if len(source) > MAX_KERNEL_CHARS:
            raise ToolRefused(f"the source has {len(source)} characters; at most {MAX_KERNEL_CHARS}")
        target = self.root / KERNEL_FILE
        scratch = target.with_name(f".{KERNEL_FILE}.writing")
        scratch.write_text(source)
        os.replace(scratch, target)
        self.kernel_writes += 1
        return f"wrote {KERNEL_FILE} ({source.count(chr(10)) + 1} lines)"

    def _tool_run_check(self, args: dict[str, Any], deadline: float | None) -> str:
        profile = args.get("profile", False)
        if not isinstance(profile, bool):
            profile = str(profile).lower() in ("1", "true", "yes")
        command = self.root / CHECK_COMMAND
        if not command.is_file():
            raise ToolRefused(f"this workspace has no {CHECK_COMMAND} command")
        timeout = self.check_timeout_s
        if deadline is not None:
            timeout = min(timeout, deadline - time.monotonic())
            if timeout <= 1:
                raise ToolRefused("no time is left to run the check")
        self.checks += 1
        return run_command([str(command)] + (["--profile"] if profile else []), self.root, timeout,
                           self._environment())

    def _tool_finish(self, args: dict[str, Any], deadline: float | None) -> str:
        self.summary = str(args.get("summary") or "").strip() or "(no summary)"
        return "finished"

    # -- helpers ----------------------------------------------------------------------------------

    def confine(self, relative: str) -> Path:
        """The workspace path ``relative`` names, or :class:`ToolRefused` if it leaves the workspace."""
        if not relative.strip():
            raise ToolRefused("the path is empty")
        if os.path.isabs(relative) or relative.startswith("~"):
            raise ToolRefused(f"{relative}: give a path relative to the workspace, not an absolute one")
        path = (self.root / relative).resolve()
        if not path.is_relative_to(self.root):
            raise ToolRefused(f"{relative}: outside the workspace; only its own files can be read")
        return path

    def _environment(self) -> dict[str, str]:
        return {k: v for k, v in os.environ.items() if k not in self.hidden_env}


def _string(args: dict[str, Any], name: str) -> str:
    value = args.get(name)
    if not isinstance(value, str):
        raise ToolRefused(f"the argument {name!r} (a string) is missing")
    return value


def run_command(argv: list[str], cwd: Path, timeout: float, env: dict[str, str]) -> str:
    """Run ``argv`` and describe its outcome for the model: exit status, stdout, stderr."""
    try:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
    except OSError as exc:
        raise ToolRefused(f"{Path(argv[0]).name} could not be started: {exc}") from None
    try:
        out, err = proc.communicate(timeout=timeout)
        head = f"exit status {proc.returncode}"
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = proc.communicate()
        head = f"timed out after {timeout:.0f}s and was stopped"
    parts = [head]
    if out.strip():
        parts.append(_clip(out.decode("utf-8", errors="replace")))
    if err.strip():
        parts.append("[stderr]\n" + _clip(err.decode("utf-8", errors="replace")))
    return "\n".join(parts)


def _clip(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text.rstrip()
    keep = limit // 2
    return f"{text[:keep]}\n[... {len(text) - 2 * keep} characters cut ...]\n{text[-keep:]}".rstrip()
