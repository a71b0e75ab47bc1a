"""What every importer shares: the summary records, writing a task folder, the provenance note, the
held-out rule, and running a suite's CUDA-minded code on the device the evaluation has.

An importer reads a user's local checkout of a suite and writes ordinary task folders
(``reference.py`` + ``task.toml`` [+ ``baseline.py``] + ``PROVENANCE.md``). Each folder is loaded
back through ``kernellab.tasks.load`` before it counts as imported: what the loader refuses is
removed again and reported as skipped, with the loader's one-line reason.
"""

from __future__ import annotations

import contextlib
import datetime
import hashlib
import math
import shutil
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import torch

from kernellab.tasks.model import TaskError

IMPORTER_VERSION = 1


@dataclass
class Imported:
    name: str  # the task folder's name under --out
    source: str  # the suite file it came from, relative to the checkout
    seen: int
    edge: int
    holdout: int
    baseline: bool
    notes: list[str] = field(default_factory=list)


@dataclass
class Skipped:
    source: str
    reason: str


@dataclass
class ImportSummary:
    suite: str
    checkout: str
    out: str
    commit: str | None
    imported: list[Imported] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)

    def reasons(self) -> dict[str, int]:
        """Skip reasons grouped by their first clause (file-specific details cut off)."""
        counts: dict[str, int] = {}
        for s in self.skipped:
            key = s.reason.split(":")[0]
            counts[key] = counts.get(key, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))

    def to_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "checkout": self.checkout, "out": self.out, "commit": self.commit,
                "imported_count": len(self.imported), "skipped_count": len(self.skipped),
                "skip_reasons": self.reasons(),
                "imported": [asdict(i) for i in self.imported], "skipped": [asdict(s) for s in self.skipped]}


@dataclass
class TaskFiles:
    """One task as an importer built it, before it is written and loaded back."""

    name: str
    source: str  # relative path in the checkout
    reference: str
    toml: dict[str, Any]
    baseline: str | None = None
    notes: list[str] = field(default_factory=list)
    origin_files: list[Path] = field(default_factory=list)  # hashed into the provenance note


def git_commit(checkout: Path) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


Convert = Callable[[Path, str], tuple[TaskFiles | None, str | None]]  # a task folder -> its files, or why not


def import_folders(checkout: Path, out: Path, summary: ImportSummary, *, suite: str, under: str, marker: str,
                   what: str, convert: Convert, only: str | None = None) -> None:
    """The run an importer of a suite with one folder per task makes: every folder below
    ``checkout/under`` (or ``checkout`` itself) that holds a ``marker`` file, whose path there
    contains ``only`` when given, goes through ``convert(folder, path)`` and is written (or skipped
    with the reason ``convert`` gives). ``what`` names the suite's checkout in the error when no
    folder is found (``"a robust-kbench"``)."""
    root = checkout / under if (checkout / under).is_dir() else checkout
    markers = sorted(root.rglob(marker))
    if not markers:
        raise FileNotFoundError(f"{checkout}: no {under}/**/{marker} (is this {what} checkout?)")
    for path in markers:
        rel = path.parent.relative_to(root).as_posix()
        if only and only not in rel:
            continue
        files, reason = convert(path.parent, rel)
        if files is None:
            summary.skipped.append(Skipped(rel, reason or "unknown"))
            continue
        write_task(files, out, summary, suite, checkout)


def write_task(files: TaskFiles, out: Path, summary: ImportSummary, suite: str, checkout: Path) -> None:
    """Write the folder, load it back, and record it as imported or (removed again) skipped."""
    from kernellab.tasks.load import load_task

    try:
        toml_text = to_toml(files.toml)
    except ValueError as exc:
        summary.skipped.append(Skipped(files.source, f"a value task.toml cannot hold: {exc}"))
        return
    folder = out / files.name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "reference.py").write_text(files.reference)
    (folder / "task.toml").write_text(toml_text)
    if files.baseline is not None:
        (folder / "baseline.py").write_text(files.baseline)
    (folder / "PROVENANCE.md").write_text(_provenance(files, suite, checkout, summary.commit))
    try:
        task = load_task(folder)
    except TaskError as exc:
        shutil.rmtree(folder)
        summary.skipped.append(Skipped(files.source, f"the written task does not load: {exc}"))
        return
    from kernellab.tasks.model import Visibility

    summary.imported.append(Imported(files.name, files.source, len(task.configs_of(Visibility.SEEN)),
                                     len(task.configs_of(Visibility.EDGE)), len(task.configs_of(Visibility.HOLDOUT)),
                                     files.baseline is not None, files.notes))


def _provenance(files: TaskFiles, suite: str, checkout: Path, commit: str | None) -> str:
    lines = [f"# Imported from {suite}", "",
             f"- source: `{files.source}` in the checkout `{checkout}`" + (f" at commit `{commit}`" if commit else ""),
             f"- imported: {datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by "
             f"`kernellab tasks import {suite}` (importer version {IMPORTER_VERSION})"]
    for path in files.origin_files:
        try:
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            continue
        rel = path.relative_to(checkout) if path.is_relative_to(checkout) else path
        lines.append(f"- sha256 of `{rel}`: `{digest}`")
    lines += ["", "The suite's own code is the user's; this folder is generated from it and is not part of kernellab.", ""]
    if files.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in files.notes] + [""]
    return "\n".join(lines)


# --- TOML: the few value types task.toml holds ---------------------------------------------------

def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value) or math.isnan(value):
            raise ValueError("task.toml cannot hold inf or nan")
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise ValueError(f"cannot write {type(value).__name__} ({value!r}) to task.toml")


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() and key.isascii() else _toml_value(key)


def to_toml(meta: dict[str, Any]) -> str:
    """Top-level keys in order; lists of tables one per line, with an optional comment per entry
    (an entry given as ``(table, comment)``)."""
    lines = []
    for key, value in meta.items():
        if isinstance(value, list) and value and all(isinstance(v, (dict, tuple)) for v in value):
            lines.append(f"{key} = [")
            for v in value:
                table, comment = v if isinstance(v, tuple) else (v, None)
                lines.append(f"    {_toml_value(table)}," + (f"  # {comment}" if comment else ""))
            lines.append("]")
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    return "\n".join(lines) + "\n"


# --- held-out configs for suites that ship none -------------------------------------------------

HOLDOUT_KINDS = ("scale-up", "scale-down", "primes", "asymmetric")
MIN_SCALED = 8  # sizes below this (kernel sizes, ranks, small counts) are never changed


def next_prime(n: int) -> int:
    n = max(n, 2)
    while any(n % d == 0 for d in range(2, int(n ** 0.5) + 1)):
        n += 1
    return n


def derived_sizes(sizes: list[int]) -> list[tuple[str, dict[int, int]]]:
    """The documented held-out rule: from the distinct sizes of a suite's largest shipped config,
    substitutions old size -> new size for each kind (sizes below ``MIN_SCALED`` stay):

    - scale-up: every size doubled;  scale-down: every size quartered (at least ``MIN_SCALED``);
    - primes: every size moved to the next prime at or above it (+1 first when it is one already);
    - asymmetric: the largest size quadrupled, the smallest (of those changed) quartered.
    A kind whose substitution changes nothing is left out."""
    big = sorted({s for s in sizes if s >= MIN_SCALED})
    if not big:
        return []
    kinds = [("scale-up", {s: 2 * s for s in big}),
             ("scale-down", {s: max(MIN_SCALED, s // 4) for s in big}),
             ("primes", {s: next_prime(s + (1 if next_prime(s) == s else 0)) for s in big})]
    asym = {big[-1]: 4 * big[-1]}
    if len(big) > 1:
        asym[big[0]] = max(MIN_SCALED, big[0] // 4)
    kinds.append(("asymmetric", asym))
    return [(k, {a: b for a, b in m.items() if a != b}) for k, m in kinds if any(a != b for a, b in m.items())]


# --- a suite's "cuda" on whatever device the evaluation has --------------------------------------

DEVICE_SHIM = '''
def _kl_device():
    """The suite wrote "cuda"; kernellab runs this where the evaluation runs (the device that
    get_inputs is called under, or the GPU when there is one)."""
    current = torch.get_default_device()
    if current.type != "cpu":
        return current
    return torch.device("cuda") if torch.cuda.is_available() else current
'''


def device_neutral(source: str) -> str:
    """Textual mapping of the suite's CUDA device literals onto ``_kl_device()``: ``device='cuda'``,
    ``.cuda()``, ``.to('cuda')``, ``torch.device('cuda')``. The shim function is defined by the
    caller (``DEVICE_SHIM``) at the top of the generated module."""
    import re

    source = re.sub(r"""device\s*=\s*(['"])cuda(:\d+)?\1""", "device=_kl_device()", source)
    source = re.sub(r"""torch\.device\(\s*(['"])cuda(:\d+)?\1\s*\)""", "_kl_device()", source)
    source = re.sub(r"""\.to\(\s*(['"])cuda(:\d+)?\1\s*\)""", ".to(_kl_device())", source)
    source = re.sub(r"\.cuda\(\s*\)", ".to(_kl_device())", source)
    return source


class _CpuForCuda(torch.overrides.TorchFunctionMode):
    """While an importer executes a suite's harness on a machine without a GPU: factory calls and
    moves asking for "cuda" get the CPU instead."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        dev = kwargs.get("device")
        if dev is not None and "cuda" in str(dev):
            kwargs["device"] = "cpu"
        if func in (torch.Tensor.cuda,):
            return args[0]
        if func is torch.Tensor.to:
            args = tuple("cpu" if (isinstance(a, str) and a.startswith("cuda")) or
                         (isinstance(a, torch.device) and a.type == "cuda") else a for a in args)
        return func(*args, **kwargs)


@contextlib.contextmanager
def cuda_on_cpu() -> Iterator[None]:
    """Run suite code written for a GPU on the CPU (importers only; never the judge)."""
    if torch.cuda.is_available():
        yield
        return
    saved = torch.cuda.synchronize, torch.Generator
    real_generator = torch.Generator

    class generator(real_generator):  # a class: torch's own annotations write ``torch.Generator | None``
        def __new__(cls, device="cpu"):
            return real_generator(device="cpu" if "cuda" in str(device) else device)

    torch.cuda.synchronize = lambda *a, **k: None
    torch.Generator = generator  # type: ignore[assignment,misc]
    try:
        with _CpuForCuda():
            yield
    finally:
        torch.cuda.synchronize, torch.Generator = saved


def safe_name(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_") or "task"


def unique_configs(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Configs without repeats, in first-seen order (a suite's test and benchmark lists overlap;
    configs are dicts, so a set cannot do it)."""
    out: list[dict[str, Any]] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def numel_of(values: list[Any]) -> int:
    return sum(v.numel() for v in values if isinstance(v, torch.Tensor))


CHECK_SECONDS = 60  # one run of suite code while importing (a Python-loop reference on the CPU can take hours)


class _TimeLimit(Exception):
    pass


def run_guarded(fn: Callable[[], Any], seconds: int = CHECK_SECONDS) -> tuple[Any, str | None]:
    """``fn()``, or its failure as one line; stopped after ``seconds`` (main thread: SIGALRM)."""
    import signal
    import threading

    limited = threading.current_thread() is threading.main_thread()
    if limited:
        def alarm(*_):
            raise _TimeLimit()
        previous = signal.signal(signal.SIGALRM, alarm)
        signal.alarm(seconds)
    try:
        return fn(), None
    except _TimeLimit:
        return None, f"took longer than {seconds} s on the CPU"
    except Exception as exc:  # noqa: BLE001 - suite code: any failure is a reason to skip, in one line
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    finally:
        if limited:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, previous)
