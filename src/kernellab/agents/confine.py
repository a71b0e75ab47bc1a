"""Confinement of an agent's process to its workspace, with bubblewrap where it can run.

Inside: the system read-only (``/usr``, ``/etc``, ``/bin``, ``/lib*``, ``/sbin``), the workspace
read-write at its own path, a private ``/tmp``, ``/proc`` and ``/dev``, the caller's extra read-only
paths (a node or npm install outside ``/usr``), new namespaces for everything (network shared only
when asked: an agent's model endpoint), ``--die-with-parent``, and exactly the environment passed.
The kernellab installation (package, source checkout, the suite's task data, its dist-info and
``.pth`` files) and any ``hide`` paths are masked wherever they fall under a bound folder.

Where bwrap is missing or cannot create namespaces (some containers forbid user namespaces), the
command runs unconfined and ``ConfinedCommand.confined`` is false with the reason, so every report can
mark the run unconfined. ``probe_confinement`` tries bwrap once per process.
"""

from __future__ import annotations

import functools
import importlib.metadata
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import kernellab
from kernellab.tasks.model import TaskError

_SYSTEM_DIRS = ("/usr", "/etc")
_TOP_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")  # symlinks into /usr on merged-usr systems
PROBE_TIMEOUT_S = 20.0


class ConfineError(TaskError):
    """A confinement that cannot be set up as asked (a bad path, an empty command): one line."""


@dataclass(frozen=True)
class Probe:
    """Whether bwrap can confine here; ``flags`` are the namespace flags that worked."""

    available: bool
    detail: str  # "bubblewrap 0.8.0 at /usr/bin/bwrap" or why not
    bwrap: str | None = None
    flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConfinedCommand:
    """What to run: ``subprocess.Popen(c.argv, env=c.env, cwd=c.cwd)``. Secrets stay in ``env``, off argv."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    confined: bool
    reason: str = ""  # why the run is unconfined; empty when confined
    network: bool = False
    masked: tuple[Path, ...] = field(default_factory=tuple)
    bound: tuple[Path, ...] = field(default_factory=tuple)  # read-only paths beyond the system's

    def to_dict(self) -> dict[str, Any]:
        """The record every run keeps (trajectories, reports)."""
        return {"confined": self.confined, "reason": self.reason or None, "network": self.network,
                "tool": "bwrap" if self.confined else None}


@functools.cache
def probe_confinement(bwrap: str = "bwrap") -> Probe:
    """Try bwrap once: a trivial command in fresh namespaces, with the mounts a confinement uses."""
    path = shutil.which(bwrap)
    if path is None:
        return Probe(False, f"{bwrap} not found on PATH (install bubblewrap, e.g. apt-get install bubblewrap)")
    true = shutil.which("true") or "/bin/true"
    failures = []
    for flags in (("--unshare-all", "--unshare-user"), ("--unshare-all",)):
        argv = [path, *_system_args(), "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", *flags,
                "--die-with-parent", "--new-session", true]
        try:
            proc = subprocess.run(argv, check=False, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, env={})
        except (OSError, subprocess.TimeoutExpired) as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
            continue
        if proc.returncode == 0:
            return Probe(True, f"{_version(path)} at {path}", path, flags)
        failures.append((proc.stderr.strip().splitlines() or [f"exit status {proc.returncode}"])[-1])
    return Probe(False, f"bwrap cannot create its namespaces here ({failures[-1]}); user namespaces may be "
                        f"forbidden in this container", path)


def _version(path: str) -> str:
    try:
        out = subprocess.run([path, "--version"], check=False, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        out = ""
    return out or "bwrap"


def confine(command: Sequence[str], workspace: Path, *, network: bool, extra_ro: Sequence[Path] = (),
            env: Mapping[str, str], hide: Sequence[Path] = (), probe: Probe | None = None) -> ConfinedCommand:
    """Wrap ``command`` so it runs confined to ``workspace`` (its working directory).

    ``extra_ro``: more paths bound read-only at their own location (an agent CLI's install, the check
    socket's folder when it is outside the workspace). ``hide``: paths to mask as well (the task's
    own folder). ``env``: the whole environment of the command. ``probe``: defaults to this machine's.
    """
    if not command or not all(isinstance(a, str) and a for a in command):
        raise ConfineError("the command to confine must be a non-empty list of non-empty strings")
    bad = [k for k, v in env.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise ConfineError(f"environment variable {bad[0]!r} must map a string to a string")
    workspace = Path(workspace).resolve()
    if not workspace.is_dir():
        raise ConfineError(f"workspace {workspace} is not a folder")
    env = dict(env)
    probe = probe or probe_confinement()
    if not probe.available:
        return ConfinedCommand(list(command), env, workspace, confined=False, reason=probe.detail, network=network)
    masks = [p for p in {*kernellab_paths(), *(Path(h).resolve() for h in hide)} if p.exists()]
    system = [Path(p) for p in (*_SYSTEM_DIRS, *_existing_top_dirs())]
    binds, links = _extra_paths([*extra_ro, *install_roots(command[0], env.get("PATH"))], masks, system)
    argv = [probe.bwrap, *_system_args(), "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    if network:
        argv += _resolver_args()
    for path in binds:
        argv += ["--ro-bind", str(path), str(path)]
    for target, link in links:
        argv += ["--symlink", target, str(link)]
    # Masks go over whatever bound folder holds them; the workspace is bound after the masks outside
    # it (so a masked folder that holds the workspace still shows the workspace) and before those in it.
    bound = [*system, workspace, *binds]
    masked: list[Path] = []
    for path in sorted(masks, key=lambda p: len(p.parts)):
        if any(b == path or b in path.parents for b in bound) and not any(m in path.parents for m in masked):
            masked.append(path)
    in_workspace = [m for m in masked if workspace == m or workspace in m.parents]
    for path in [m for m in masked if m not in in_workspace]:
        argv += _mask(path)
    argv += ["--bind", str(workspace), str(workspace)]
    for path in in_workspace:
        argv += _mask(path)
    argv += [*probe.flags, *(["--share-net"] if network else []), "--die-with-parent", "--new-session",
             "--chdir", str(workspace), "--", *command]
    return ConfinedCommand(argv, env, workspace, confined=True, network=network, masked=tuple(masked),
                           bound=(*binds, *(link for _, link in links)))


def _extra_paths(paths: list[Path | str], masks: list[Path],
                 system: list[Path]) -> tuple[list[Path], list[tuple[str, Path]]]:
    """Real folders and files to bind read-only where they are, and the symlinks on the way to them
    (a CLI's ``bin`` entry) to make again inside where no bound folder shows them already."""
    binds: list[Path] = []
    links: list[tuple[str, Path]] = []
    for raw in dict.fromkeys(paths):
        path = Path(os.path.abspath(raw))
        if not path.exists():
            raise ConfineError(f"extra read-only path {raw} does not exist")
        chain = []
        while path.is_symlink():
            target = os.readlink(path)
            chain.append((target, path))
            path = Path(os.path.abspath(path.parent / target))
        path = path.resolve()
        for seen in (path, *(link for _, link in chain)):
            inside = next((m for m in masks if m == seen or m in seen.parents), None)
            if inside is not None:
                raise ConfineError(f"cannot bind {seen} into the confinement: it lies in {inside}, which agents "
                                   f"must not see")
        binds.append(path)
        links += chain
    binds = [b for b in dict.fromkeys(binds) if not any(o in b.parents for o in binds)]
    links = [(t, link) for t, link in dict.fromkeys(links)
             if not any(o == link or o in link.parents for o in [*system, *binds])]
    return binds, links


def install_roots(program: str, path: str | None) -> list[Path]:
    """What must be visible for ``program`` (a name looked up on ``path``, or a path) to run inside,
    when it lives outside the system folders: the name as found, its install (an npm package folder,
    the prefix above a ``bin`` folder), and the same for its script interpreter (``node``)."""
    roots: list[Path] = []
    if "/" in program and not os.path.isabs(program):  # relative to the workspace: already inside
        return roots
    for depth in range(2):
        found = shutil.which(program, path=path)
        if found is None:
            break
        link = Path(os.path.abspath(found))
        real = link.resolve()
        roots += [link, _install_root(real)]
        interpreter = _shebang(real)
        if depth or interpreter is None:
            break
        program = interpreter
    return [r for r in dict.fromkeys(roots) if not _in_system(r)]


def _install_root(real: Path) -> Path:
    parts = real.parts
    if "node_modules" in parts:
        i = len(parts) - 1 - parts[::-1].index("node_modules")
        root = Path(*parts[:i + (3 if i + 1 < len(parts) and parts[i + 1].startswith("@") else 2)])
    elif real.parent.name == "bin":
        root = real.parent.parent
    else:
        root = real.parent
    home = Path.home().resolve()
    if root == home or root in home.parents:  # never a whole home folder (or /): just the program
        return real
    return root


def _shebang(path: Path) -> str | None:
    """The interpreter a script names (``#!/usr/bin/env node`` gives ``node``), or None."""
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = [w for w in first[2:].decode(errors="replace").split() if not w.startswith("-")]
    if words and os.path.basename(words[0]) == "env":
        words = words[1:]
    return words[0] if words else None


def _in_system(path: Path) -> bool:
    system = [Path(d) for d in (*_SYSTEM_DIRS, *_TOP_LINKS)]
    return any(path == d or d in path.parents for d in system)


def _mask(path: Path) -> list[str]:
    return ["--tmpfs", str(path)] if path.is_dir() else ["--ro-bind", "/dev/null", str(path)]


def _system_args() -> list[str]:
    args: list[str] = []
    for d in _SYSTEM_DIRS:
        if os.path.isdir(d):
            args += ["--ro-bind", d, d]
    for top in _TOP_LINKS:
        if os.path.islink(top):
            args += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            args += ["--ro-bind", top, top]
    return args


def _existing_top_dirs() -> list[str]:
    return [t for t in _TOP_LINKS if os.path.isdir(t) and not os.path.islink(t)]


def _resolver_args() -> list[str]:
    """/etc/resolv.conf often links into /run (systemd-resolved): bind what it points at."""
    target = os.path.realpath("/etc/resolv.conf")
    if os.path.exists(target) and not target.startswith("/etc/") and not target.startswith("/usr/"):
        return ["--ro-bind", target, target]
    return []


def kernellab_paths() -> list[Path]:
    """Every path through which a confined process could read kernellab: the package (with the
    suite's task data), a source checkout holding it, and the distribution's files (dist-info, the
    editable-install ``.pth`` and finder, the console script)."""
    package = Path(kernellab.__file__).resolve().parent
    paths = {package}
    src = package.parent
    if src.name == "src" and (src.parent / "pyproject.toml").is_file():
        paths.add(src.parent)
    try:
        dist = importlib.metadata.distribution("kernellab")
    except importlib.metadata.PackageNotFoundError:
        return sorted(paths)
    for f in dist.files or ():
        located = Path(str(dist.locate_file(f))).resolve()
        if located.suffix == ".pth" or "kernellab" in located.name:
            paths.add(located)
        parent = located.parent
        if parent.name.endswith(".dist-info") and "kernellab" in parent.name:
            paths.add(parent)
    return sorted(paths)
