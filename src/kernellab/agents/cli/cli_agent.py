"""The shared life of a whole-agent CLI proposal: find the CLI, build its command and environment,
run it in the workspace within the time limit, read its transcript, and take kernel.py.

An adapter (``claude_code``, ``codex``, ``cursor``, ``generic``) says only what differs: its options,
its argv, its environment variables, and how its stream reports tokens and cost.

Every run gets a private directory (deleted afterwards) that is the CLI's ``$HOME``, so the user's
configuration is neither read nor modified; the environment is built from nothing but a short list of
passed-through variables, the adapter's own, and the ``env`` option. The prompt, the raw stream
(``Proposal.log_path``) and the CLI's stderr are kept in ``log_dir`` (default: ``<workspace>.logs``
beside the workspace, outside the agent's reach).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kernellab.agents.base import (
    Agent,
    AgentError,
    Availability,
    Proposal,
    ProposalRequest,
    Usage,
)
from kernellab.agents.cli.process import MARKER, RunResult, new_marker, run_process
from kernellab.agents.cli.prompt import build_prompt
from kernellab.agents.cli.streams import StreamReport

log = logging.getLogger(__name__)

CLIS_DIR_ENV = "KERNELLAB_AGENT_CLIS"  # a folder holding agent CLIs (what .ci/install_agent_clis.sh prints)

# Variables of the caller's environment a CLI gets; API keys are passed only by the adapter that needs one.
PASSED_ENV = ("PATH", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "TZ", "TERM", "CUDA_VISIBLE_DEVICES",
              "CUDA_HOME", "LD_LIBRARY_PATH", "VIRTUAL_ENV", "TRITON_INTERPRET")

# wrap(argv, workspace, env) -> (argv, confined): lets the caller confine the CLI (e.g. kernellab's
# confine module); HOME (and the adapter's config directories) in env must stay writable.
Wrap = Callable[[list[str], Path, dict[str, str]], Any]


@dataclass(frozen=True)
class CLIOptions:
    """Options every CLI adapter takes."""

    executable: str | None = None  # the CLI: a path or a name; default: $KERNELLAB_AGENT_CLIS, then PATH
    model: str | None = None
    base_url: str | None = None  # the model endpoint (a local server, a proxy)
    api_key_env: str | None = None  # the variable of this environment that holds the key
    timeout_s: float = 1800.0  # wall time of one proposal, unless the request's deadline is shorter
    env: Mapping[str, str] = field(default_factory=dict)  # more variables for the CLI, set last
    pass_env: tuple[str, ...] = ()  # more variables of this environment to pass on
    log_dir: str | None = None  # where prompt, transcript and stderr go; default <workspace>.logs
    extra_args: tuple[str, ...] = ()  # appended to the CLI's arguments
    usd_per_mtok: tuple[float, float] | None = None  # (input, output) prices where the CLI reports no cost
    wrap: Wrap | None = None


@dataclass(frozen=True)
class RunFiles:
    """Where one proposal's run lives."""

    workspace: Path
    private: Path  # deleted after the run; HOME is private/home
    home: Path
    prompt: str
    limit_s: float  # the wall time the CLI gets
    prompt_path: Path
    transcript: Path
    stderr: Path


@dataclass(frozen=True)
class LastRun:
    """The process side of the last proposal (for callers and tests): argv, result, confinement."""

    argv: tuple[str, ...]
    result: RunResult
    confined: bool
    stderr_path: Path


class CLIAgent(Agent):
    executable_name: ClassVar[str] = ""
    Options: ClassVar[type[CLIOptions]] = CLIOptions
    transcript_suffix: ClassVar[str] = ".jsonl"
    key_env: ClassVar[tuple[str, ...]] = ()  # where the CLI reads its key, in order of preference
    install_hint: ClassVar[str] = "bash .ci/install_agent_clis.sh installs claude and codex"

    def __init__(self, **options: Any) -> None:
        self.options = _make_options(self.Options, self.name, options)
        self.executable = self._executable()
        self.last_run: LastRun | None = None

    # --- what an adapter says -------------------------------------------------------------------
    def command(self, executable: Path, files: RunFiles) -> list[str]:
        """The argv up to the prompt (``extra_args`` and ``prompt_args`` follow)."""
        raise NotImplementedError

    def prompt_args(self, files: RunFiles) -> list[str]:
        return [files.prompt]

    def cli_env(self, files: RunFiles) -> dict[str, str]:
        """The adapter's own variables (endpoint, key, switches that keep the CLI quiet)."""
        return {}

    def prepare(self, files: RunFiles) -> None:
        """Write what the CLI needs in its private directory before it starts (configuration)."""

    def report(self, transcript: Path) -> StreamReport:
        raise NotImplementedError

    # --- shared ---------------------------------------------------------------------------------
    @classmethod
    def find_executable(cls, explicit: str | None = None) -> Path | None:
        """The CLI to run: ``explicit`` (a path, or a name looked up on PATH), else the one in
        ``$KERNELLAB_AGENT_CLIS``, else the one on PATH."""
        if explicit:
            path = Path(explicit).expanduser()
            if path.parent != Path(".") or path.is_file():
                return path.resolve() if path.is_file() and os.access(path, os.X_OK) else None
            found = shutil.which(explicit)
            return Path(found) if found else None
        folder = os.environ.get(CLIS_DIR_ENV)
        if folder:
            candidate = Path(folder).expanduser() / cls.executable_name
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return candidate
        found = shutil.which(cls.executable_name)
        return Path(found) if found else None

    @classmethod
    def availability(cls) -> Availability:
        path = cls.find_executable()
        if path is None:
            where = f"${CLIS_DIR_ENV} or PATH" if os.environ.get(CLIS_DIR_ENV) else "PATH"
            return Availability(False, f"{cls.executable_name} not found on {where} "
                                       f"({cls.install_hint})")
        version = cli_version(str(path))
        if version is None:
            return Availability(False, f"{path} --version failed")
        return Availability(True, f"{cls.executable_name} {version} at {path}")

    def _executable(self) -> Path:
        path = self.find_executable(self.options.executable)
        if path is None:
            raise AgentError(f"{self.name}: {self.options.executable or self.executable_name} not found "
                             f"(set executable=PATH, ${CLIS_DIR_ENV}, or PATH)")
        return path

    def key_vars(self) -> dict[str, str]:
        """The API key for the CLI, under the name it reads: none if the env option sets one, else
        ``api_key_env`` of this environment, else the first of ``key_env`` this environment has."""
        if any(self.options.env.get(name) for name in self.key_env):
            return {}
        if self.options.api_key_env:
            value = os.environ.get(self.options.api_key_env)
            return {self.key_env[0]: value} if value else {}
        return next(({name: os.environ[name]} for name in self.key_env if os.environ.get(name)), {})

    def require_key(self) -> None:
        if self.key_env and not (self.key_vars() or any(self.options.env.get(n) for n in self.key_env)):
            source = self.options.api_key_env or " or ".join(self.key_env)
            raise AgentError(f"{self.name}: no API key: set {source} (or pass it in env=)")

    def time_limit(self, request: ProposalRequest) -> float:
        limits = [t for t in (self.options.timeout_s, request.deadline_s) if t]
        return min(limits) if limits else self.options.timeout_s

    def base_env(self, files: RunFiles) -> dict[str, str]:
        env = {name: os.environ[name] for name in PASSED_ENV + tuple(self.options.pass_env) if name in os.environ}
        # The CLI's own folder first, then this Python's (so ./check's python3 is one with kernellab).
        first = [str(self.executable.parent), str(Path(sys.executable).parent)]
        env["PATH"] = os.pathsep.join(first + [p for p in env.get("PATH", os.defpath).split(os.pathsep)
                                               if p and p not in first])
        env.setdefault("SHELL", "/bin/bash")
        env.setdefault("LANG", "C.UTF-8")
        env.update(HOME=str(files.home), NO_COLOR="1")
        env.setdefault("TERM", "dumb")
        return env

    def propose(self, request: ProposalRequest) -> Proposal:
        workspace = request.workspace.resolve()
        if not workspace.is_dir():
            raise AgentError(f"{self.name}: workspace {workspace} is not a folder")
        log_dir = Path(self.options.log_dir).expanduser() if self.options.log_dir \
            else workspace.parent / f"{workspace.name}.logs"
        log_dir.mkdir(parents=True, exist_ok=True)
        stem = _free_stem(log_dir, f"{self.name}-{request.iteration:03d}")
        limit = self.time_limit(request)
        prompt = build_prompt(request, limit)
        # A confinement binds the workspace and little else read-write, so a wrapped run keeps its
        # private directory in the workspace's state folder (removed after the run like any other).
        root = None
        if self.options.wrap is not None:
            root = workspace / ".kernellab"
            root.mkdir(exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"kernellab-{self.name}-", dir=root, ignore_cleanup_errors=True) as tmp:
            private = Path(tmp)
            files = RunFiles(workspace, private, private / "home", prompt, limit, log_dir / f"{stem}.prompt.md",
                             log_dir / f"{stem}{self.transcript_suffix}", log_dir / f"{stem}.stderr.txt")
            files.home.mkdir()
            files.prompt_path.write_text(prompt)
            self.prepare(files)
            env = self.base_env(files) | self.cli_env(files) | dict(self.options.env)
            env[MARKER] = new_marker()
            argv = self.command(self.executable, files) + list(self.options.extra_args) + self.prompt_args(files)
            confined = False
            if self.options.wrap is not None:
                argv, env, confined = _unwrap(self.options.wrap(argv, workspace, env), env)
                env[MARKER] = env.get(MARKER) or new_marker()
            log.info("%s: running %s in %s (limit %.0fs)", self.name, argv[0], workspace, limit)
            result = run_process(argv, cwd=workspace, env=env, timeout_s=limit,
                                 stdout_path=files.transcript, stderr_path=files.stderr)
        self.last_run = LastRun(tuple(argv), result, confined, files.stderr)
        report = self.report(files.transcript)
        kernel = workspace / "kernel.py"
        source = kernel.read_text(errors="replace") if kernel.is_file() else None
        usage = Usage(report.tokens_in, report.tokens_out, report.cost_usd, report.steps, result.wall_s)
        if usage.cost_usd is None and self.options.usd_per_mtok and report.tokens_in is not None:
            price_in, price_out = self.options.usd_per_mtok
            usage.cost_usd = (report.tokens_in * price_in + (report.tokens_out or 0) * price_out) / 1e6
        return Proposal(source, usage, self._note(report, result, files, source), files.transcript,
                        result.timed_out)

    def _note(self, report: StreamReport, result: RunResult, files: RunFiles, source: str | None) -> str:
        if result.timed_out:
            note = f"stopped at the time limit after {result.wall_s:.0f}s"
        elif report.stop:
            note = f"stopped by {report.stop}"
        elif result.returncode != 0 or report.error:
            tail = _tail(files.stderr)
            note = f"{self.executable_name} exited with {result.returncode}"
            if report.error:
                note += f": {report.error}"
            if tail:
                note += f" ({tail})"
        else:
            note = report.final_text.strip()
        if source is None:
            note = f"no kernel.py in the workspace; {note}"
        return note[:2000]


@functools.lru_cache(maxsize=32)
def cli_version(path: str) -> str | None:
    """The first line of ``path --version`` run with a throwaway HOME; None if it fails."""
    with tempfile.TemporaryDirectory(prefix="kernellab-version-") as home:
        env = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ} | {"HOME": home}
        env["PATH"] = os.pathsep.join([str(Path(path).parent), env.get("PATH", os.defpath)])
        try:
            done = subprocess.run([path, "--version"], check=False, capture_output=True, text=True, timeout=60, env=env,
                                  stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired):
            return None
    lines = (done.stdout or done.stderr).strip().splitlines()
    return lines[0].strip() if done.returncode == 0 and lines else None


def _free_stem(folder: Path, stem: str) -> str:
    candidate, n = stem, 1
    while any(folder.glob(f"{candidate}.*")):
        n += 1
        candidate = f"{stem}-{n}"
    return candidate


def _tail(path: Path, limit: int = 400) -> str:
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return ""
    return " | ".join(text[-limit:].splitlines()[-5:])


def _unwrap(wrapped: Any, env: dict[str, str]) -> tuple[list[str], dict[str, str], bool]:
    """Accept (argv, confined), an object with ``argv`` (and ``env``, ``confined``: the confine module's
    ConfinedCommand), or a bare argv; return argv, environment, confined."""
    if isinstance(wrapped, tuple) and len(wrapped) == 2 and isinstance(wrapped[1], bool):
        return list(wrapped[0]), env, wrapped[1]
    argv = getattr(wrapped, "argv", None)
    if argv is not None:
        return list(argv), dict(getattr(wrapped, "env", None) or env), bool(getattr(wrapped, "confined", True))
    return list(wrapped), env, True


def _make_options(cls: type[CLIOptions], agent: str, given: dict[str, Any]) -> CLIOptions:
    known = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise AgentError(f"{agent}: unknown option {', '.join(map(repr, unknown))}; known: {', '.join(known)}")
    values = {}
    for name, value in given.items():
        try:
            values[name] = _coerce(str(known[name].type), value)
        except ValueError as e:
            raise AgentError(f"{agent}: option {name}={value!r}: {e}") from None
    try:
        return cls(**values)
    except (TypeError, ValueError) as e:
        raise AgentError(f"{agent}: {e}") from None


def _coerce(annotation: str, value: Any) -> Any:
    """Options may come as text (``--agent-option max_turns=30``): convert by the field's type."""
    if not isinstance(value, str):
        if isinstance(value, list):
            return tuple(value)
        return value
    if value.lower() in ("none", "") and "None" in annotation:
        return None
    if annotation.startswith("bool"):
        if value.lower() not in ("1", "0", "true", "false", "yes", "no"):
            raise ValueError("not a yes/no value")
        return value.lower() in ("1", "true", "yes")
    if annotation.startswith("int"):
        return int(value)
    if annotation.startswith("float"):
        return float(value)
    if annotation.startswith("tuple[float"):
        return tuple(float(v) for v in value.split(","))
    if annotation.startswith("tuple"):
        return tuple(v for v in value.split(",") if v)
    if annotation.startswith("Mapping"):
        pairs = [p.split("=", 1) for p in value.split(",") if p]
        if any(len(p) != 2 for p in pairs):
            raise ValueError("expected NAME=VALUE,NAME=VALUE")
        return dict(pairs)
    return value
