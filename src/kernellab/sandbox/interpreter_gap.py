"""Recognising the Triton interpreter's own gaps by where an exception was raised, never by its text.

Without a GPU, Triton candidates run under ``TRITON_INTERPRET=1``, which cannot run everything the
compiler can (libdevice, inline PTX, anything that needs a GPU driver). Such a candidate must get
``unsupported_in_interpreter``, never a failure. The text of an exception is the candidate's to
choose (``raise RuntimeError("not supported")`` on a wrong result), so the harness decides here,
in the child, from the exception's traceback: the code object that raised it, the code that led
there, and the exception's exact class, matched against ``GAPS``, a table of the gaps this
harness knows. A candidate can trigger a real gap on purpose (call libdevice on the shapes it
cannot handle); that only turns its CPU verdict into "unsupported", never into "passed", and the
GPU judges it in full.

The libdevice functions of ``triton.language.extra`` are the one gap that raises nothing by itself:
under the interpreter the generic ones are bodies of ``...`` that return None (the failure then
surfaces later, in the candidate's own arithmetic, where it is indistinguishable from a bug) and
the backend ones raise a ``ValueError`` meant for host code. ``install`` replaces them in interpreter
mode, before any candidate code runs, by stubs that raise ``NoInterpreterImplementation`` at the
call.

Paths are fixed when this module is imported (in the fork server, before any candidate code).
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import sys
from dataclasses import dataclass
from types import FunctionType, TracebackType


class NoInterpreterImplementation(NotImplementedError):
    """Raised by the stubs ``install`` puts in place of ``triton.language.extra`` functions."""


def _package_dir(name: str) -> str:
    module = importlib.import_module(name)
    return os.path.realpath(os.path.dirname(module.__file__)) + os.sep


_TRITON = _package_dir("triton")
_THIS_FILE = os.path.realpath(__file__)
_SHIM = "_patch_attr."  # the interpreter's wrapper of patched builtins (qualified name prefix)


@dataclass(frozen=True)
class Gap:
    """A gap of the interpreter: an exception of exactly ``exc_class`` raised by ``function`` of ``file``
    (relative to the triton package; "" for this module's stubs). ``in_kernel``: it counts only when
    raised inside an interpreted kernel launch (the same call from host code fails on a GPU too),
    reached from the kernel through ``entry`` (a folder of the triton package the kernel called into:
    the public language, not interpreter internals it could call directly)."""

    name: str
    exc_class: type[BaseException]
    file: str
    function: str
    in_kernel: bool
    entry: str | None
    what: str


GAPS: tuple[Gap, ...] = (
    Gap("extra_function", NoInterpreterImplementation, "", "_no_interpreter_implementation", True, None,
        "a triton.language.extra (libdevice) function, which the interpreter does not implement"),
    Gap("extern_elementwise", NotImplementedError, "runtime/interpreter.py", "create_extern_elementwise", True,
        "language/", "tl.extern_elementwise, which the interpreter does not implement"),
    Gap("inline_asm", NotImplementedError, "runtime/interpreter.py", "create_inline_asm", True, "language/",
        "inline assembly (tl.inline_asm_elementwise), which the interpreter does not implement"),
    Gap("no_driver", RuntimeError, "runtime/driver.py", "_create_driver", False, None,
        "a GPU driver (\"0 active drivers\": autotune benchmarks, device properties)"),
)
GAP_NAMES = frozenset(g.name for g in GAPS)


def describe(name: str) -> str:
    """The harness's own words for a gap (never the candidate's exception text)."""
    return next(g.what for g in GAPS if g.name == name)


def install() -> int:
    """Under the interpreter only: replace every function of ``triton.language.extra`` by a stub that
    raises ``NoInterpreterImplementation``; returns how many names were replaced."""
    try:
        extra = importlib.import_module("triton.language.extra")
    except ImportError:
        return 0
    names = ["triton.language.extra.libdevice"]
    names += [m.name for m in pkgutil.walk_packages(extra.__path__, prefix="triton.language.extra.")]
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a backend's module that cannot load here has nothing to replace
            continue
    stubs: dict[int, FunctionType] = {}
    replaced = 0
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "triton.language.extra" or name.startswith("triton.language.extra.")):
            continue
        for attr, value in list(vars(module).items()):
            if attr.startswith("_") or not isinstance(value, FunctionType) \
                    or not str(getattr(value, "__module__", "")).startswith("triton.language.extra"):
                continue
            stub = stubs.get(id(value))
            if stub is None:
                stub = stubs[id(value)] = _stub(f"{value.__module__}.{attr}")
            setattr(module, attr, stub)
            replaced += 1
    return replaced


def _stub(qualified: str) -> FunctionType:
    def stub(*args, **kwargs):
        _no_interpreter_implementation(qualified)

    stub.__name__ = stub.__qualname__ = qualified.rsplit(".", 1)[-1]
    return stub


def _no_interpreter_implementation(qualified: str) -> None:
    raise NoInterpreterImplementation(f"{qualified} has no implementation in the Triton interpreter")


def classify(exc: BaseException) -> str | None:
    """The name of the known gap ``exc`` (or an exception it was raised from) is, or None."""
    seen: set[int] = set()
    link: BaseException | None = exc
    while link is not None and id(link) not in seen:
        seen.add(id(link))
        frames = _frames(link.__traceback__)
        for gap in GAPS:
            if _matches(gap, link, frames):
                return gap.name
        link = link.__cause__ or link.__context__
    return None


def _frames(tb: TracebackType | None) -> list[tuple[str, str, str]]:
    """(real file, function name, qualified name) of each frame, outermost first."""
    out = []
    while tb is not None:
        code = tb.tb_frame.f_code
        out.append((os.path.realpath(code.co_filename), code.co_name, code.co_qualname))
        tb = tb.tb_next
    return out


def _in_triton(path: str, below: str = "") -> bool:
    return path.startswith(_TRITON + below)


def _matches(gap: Gap, exc: BaseException, frames: list[tuple[str, str, str]]) -> bool:
    if type(exc) is not gap.exc_class or not frames:
        return False
    where, function, _ = frames[-1]
    if gap.file:
        if where != _TRITON + gap.file or function != gap.function:
            return False
    elif where != _THIS_FILE or function != gap.function:
        return False
    if not gap.in_kernel:
        return True
    launch = _launch_index(frames)
    if launch is None:
        return False
    if gap.entry is None:
        return True
    # The kernel's call into triton: the first triton frame after the last frame outside triton,
    # past the shim through which the interpreter hands builtins their ``_semantic``.
    outside = [i for i, (path, _, _) in enumerate(frames) if i > launch and not _in_triton(path)]
    if not outside:
        return False
    entry = outside[-1] + 1
    while entry < len(frames) and frames[entry][0] == _TRITON + "runtime/interpreter.py" \
            and frames[entry][2].startswith(_SHIM):
        entry += 1
    return entry < len(frames) and _in_triton(frames[entry][0], gap.entry)


def _launch_index(frames: list[tuple[str, str, str]]) -> int | None:
    """The last frame of the interpreter's kernel launch (``GridExecutor.__call__``), if any."""
    found = None
    for i, (path, _function, qualified) in enumerate(frames):
        if path == _TRITON + "runtime/interpreter.py" and qualified == "GridExecutor.__call__":
            found = i
    return found
