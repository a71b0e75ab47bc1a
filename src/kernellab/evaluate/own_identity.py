"""Which kernels in a trace are the candidate's own: by what its compile produced, never by name.

The child compiles the candidate's kernels under ``<name>__kl_own`` (``sandbox/own_compiles.py``), a
suffix no precompiled library kernel carries. The judge does not take the child's word for it: it
reads what the candidate's compiles left on disk in the child's own folders.

- Triton: each kernel in the child's Triton cache (``TRITON_CACHE_DIR``) has a metadata ``.json``
  with the compiled kernel's name and a ``.source`` (the Triton IR the compile started from) whose
  locations name the files its code comes from. A kernel counts only if the first is the
  candidate's file and every other one is too, or Triton's own language: a library's Triton kernel
  compiled in the same process (Inductor's, or one the candidate renamed) does not, nor a kernel of
  the candidate's whose body is a library's ``@triton.jit`` function. A file name is only what the
  compiled function says of itself (Triton's ``_unsafe_update_src`` gives a function of the
  candidate's file any text), so each location in the candidate's file must also fall where the
  file, as the judge read it, has code: the line and column where an expression or statement of one
  of its functions starts (and a location in ``triton.language`` where that file has code). Text
  that was not in the file has no such places, unless the file holds that very code. The binary must
  be what the judge's own Triton makes of that first stage with the options the metadata records: a
  stage hook or Triton's kernel override replaces later stages and leaves the ``.source`` alone. A
  compile bearing an own name whose first stage the judge cannot read makes the name nobody's.
- CUDA C++: the entry symbols of the extensions it built (``TORCH_EXTENSIONS_DIR``), read with
  ``cuobjdump -symbols`` (the CUDA toolkit's, or the one Triton ships), each counted only if its
  first instruction comes from the ``cuda.cu`` that ``load_inline`` wrote beside the binary, in
  every architecture's code (the line information of its ``-lineinfo`` build, read with
  ``nvdisasm -gi``): the suffix is public, and a ``#define`` in the candidate's own text could give
  it to a library kernel compiled from a header. Where no ``cuobjdump`` exists, the ``__global__``
  names of its scanned sources stand in (a weaker proof: source is not identity, though the suffix
  still keeps precompiled library kernels out).

A trace record is judged by its name, so a name counts only if every compile bearing it is the
candidate's: a decoy of its own under a library kernel's forged name makes that name nobody's.

Under the Triton interpreter nothing is compiled: a launch is the candidate's when the code the
interpreter ran comes from the candidate's file (``sandbox.evidence.new_launch_log``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from kernellab.sandbox.own_compiles import OWN_SUFFIX

log = logging.getLogger(__name__)

_LOC = re.compile(r'loc\("((?:[^"\\]|\\.)*)":(\d+):(\d+)\)')
_ENTRY = re.compile(r"\bSTO_ENTRY\s+(\S+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class OwnIdentity:
    """Function names (suffix included) of the kernels the candidate's own compiles produced."""

    kernels: frozenset[str] = frozenset()
    notes: tuple[str, ...] = ()

    def owns(self, kernel_identifier: str) -> bool:
        return kernel_identifier.endswith(OWN_SUFFIX) and kernel_identifier in self.kernels


def mangled_identifiers(symbol: str) -> list[str]:
    """The source names inside an Itanium-mangled symbol (``_ZN2ns10add_kernelIfEEvPf`` ->
    ``["ns", "add_kernel"]``); an unmangled (``extern "C"``) symbol is its own name."""
    if not symbol.startswith("_Z"):
        return [symbol]
    names, i = [], 2
    while i < len(symbol):
        m = re.match(r"\d+", symbol[i:])
        if not m:
            i += 1
            continue
        n, start = int(m.group()), i + len(m.group())
        word = symbol[start:start + n]
        substitution = symbol[i - 1] in "ST"  # S1_, T0_: back-references, not lengths
        if n and not substitution and len(word) == n and re.fullmatch(r"[A-Za-z_]\w*", word):
            names.append(word)
            i = start + n
        else:
            i = start
    return names


class OwnKernelReader:
    """Reads one child's compile folders, remembering what it has read (entries never change once
    written, and an evaluation re-reads after every traced call to pick up new specialisations)."""

    def __init__(self, candidate_file: str, triton_cache: str | os.PathLike[str] | None,
                 extensions: str | os.PathLike[str] | None, source_cuda_names: Iterable[str] = (),
                 candidate_source: str | None = None, compile_env: Mapping[str, str] | None = None):
        """``candidate_source``: the candidate's text as the judge read it (default: the file now).
        ``compile_env``: the environment the child compiled in (its ``TRITON_*`` variables are the
        ones a rebuild runs with; default: the judge's own)."""
        self.candidate_file = str(candidate_file)
        self.compile_env = dict(compile_env) if compile_env is not None else None
        self._code_places = code_places(candidate_source if candidate_source is not None
                                        else _read_text(self.candidate_file))
        self.triton_cache = Path(triton_cache) if triton_cache else None
        self.extensions = Path(extensions) if extensions else None
        self.source_cuda_names = frozenset(source_cuda_names)
        # entry folder -> (suffixed kernel name or None, whether it is the candidate's, complete)
        self._entries: dict[Path, tuple[str | None, bool, bool]] = {}
        self._binaries: dict[tuple[Path, float, int], dict[str, bool]] = {}  # suffixed name -> own
        self._notes: list[str] = []
        self._hidden = False  # a compile entry the judge may not read: which names it bears is unknown

    def identity(self) -> OwnIdentity:
        """The suffixed names that only the candidate's own compiles bear. A trace record is judged
        by its name, so a name also borne by a compile that is not the candidate's (a library kernel
        given it by the candidate's ``repr`` or ``#define``, beside a decoy of its own) is nobody's."""
        decisions = [*self._triton_kernels(), *self._extension_kernels()]
        refused = {name for name, own in decisions if not own}
        if self._hidden:  # it may bear any name: none of the Triton cache's counts
            refused |= {name for name, _ in decisions if name in self._triton_names()}
        return OwnIdentity(frozenset(name for name, own in decisions if own and name not in refused),
                           tuple(self._notes))

    # --- Triton ----------------------------------------------------------------------------------
    def _triton_kernels(self) -> list[tuple[str, bool]]:
        if self.triton_cache is None or not self.triton_cache.is_dir():
            return []
        try:
            entries = list(self.triton_cache.iterdir())
        except PermissionError:
            entries = []
            self._hide()
        for entry in entries:
            if not os.access(entry, os.R_OK | os.X_OK):
                self._hide()
                continue
            known = self._entries.get(entry)
            if known is None or not known[2]:
                settled = _settled(entry)  # read before the entry, so a late file is read next time
                self._entries[entry] = (*self._triton_entry(entry), settled)
        return [(name, own) for name, own, _ in self._entries.values() if name]

    def _rebuilds(self, meta: Path, metadata: dict) -> bool:
        """Whether the entry's binary is what Triton's stages make of its first stage with the
        options it records: a stage hook, Triton's kernel override or an ``ir_override`` of any
        spelling gives a binary the ``.source`` does not."""
        try:
            cached = meta.with_suffix(".cubin").read_bytes()
        except OSError:
            return False  # no binary for this GPU: nothing of it can have run here
        try:
            return rebuilt_binary(meta.with_suffix(".source"), metadata, self.compile_env) == cached
        except Exception as exc:  # noqa: BLE001 - Triton's own errors: then no proof, not own
            self._note(f"a Triton kernel could not be compiled again from its first stage ({type(exc).__name__}: "
                       f"{str(exc)[:120]}): not counted as the candidate's")
            return False

    def _hide(self) -> None:
        self._hidden = True
        self._note("a Triton compile entry could not be read (permission denied): no Triton kernel counted "
                   "as the candidate's")

    def _triton_names(self) -> set[str]:
        return {name for name, _, _ in self._entries.values() if name}

    def _triton_entry(self, entry: Path) -> tuple[str | None, bool]:
        """(the suffixed kernel name compiled here, whether it is the candidate's): its code starts in
        the candidate's file and every location in it is there or in Triton's own language (a library
        ``@triton.jit`` function called from a one-line kernel of the candidate's is inlined into it),
        and each of its locations in the candidate's file is a place where that file has code; and no
        later stage was replaced by a file's code (``ir_override``, which the metadata records)."""
        for meta in entry.glob("*.json"):
            if meta.name.startswith("__grp__"):
                continue
            try:
                metadata = json.loads(meta.read_text())
            except PermissionError:  # no compile leaves that: the entry was made unreadable
                self._hide()
                continue
            except (OSError, ValueError):
                continue
            name = metadata.get("name") if isinstance(metadata, dict) else None
            if not isinstance(name, str) or not name.endswith(OWN_SUFFIX):
                continue
            if metadata.get("ir_override"):
                # A launch option that replaces a later stage's code with a file's: the binary is
                # then that file's, whatever the ``.source`` says.
                return name, False
            try:  # Triton writes the first stage before the metadata: a compile from Python has one
                source = meta.with_suffix(".source").read_text(errors="replace")
            except PermissionError:
                self._hide()
                return name, False
            except OSError:  # compiled from an IR file (``IRSource``), or its first stage removed
                return name, False
            locs = [(_unescape(m.group(1)), int(m.group(2)), int(m.group(3))) for m in _LOC.finditer(source)]
            own = bool(locs) and locs[0][0] == self.candidate_file and all(
                (line, col) in (self._code_places if f == self.candidate_file else _language_places(f))
                for f, line, col in locs)
            if own and not self._rebuilds(meta, metadata):
                return name, False
            return name, own
        return None, False

    # --- CUDA extensions -----------------------------------------------------------------------------
    def _extension_kernels(self) -> list[tuple[str, bool]]:
        if self.extensions is None or not self.extensions.is_dir():
            return []
        binaries = [p for p in self.extensions.rglob("*.so") if p.is_file()]
        tool = cuobjdump() if binaries else None
        if binaries and tool is not None and nvdisasm(tool) is None:
            self._note("no nvdisasm here: the candidate's CUDA kernels were recognised by their names alone, "
                       "not by the file their code comes from")
        if binaries and tool is None:
            self._note("no cuobjdump here: the candidate's CUDA kernels were recognised by their source names")
            return [(n + OWN_SUFFIX, True) for n in self.source_cuda_names]
        for path in binaries:
            stat = path.stat()
            key = (path, stat.st_mtime, stat.st_size)
            if key not in self._binaries:
                read = entry_decisions(path, tool, source=path.parent / EXTENSION_SOURCE)
                if read is None:  # read again next time (a busy host's timeout is no proof of anything)
                    # Nothing of it counts meanwhile: an unreadable file (one the candidate wrote
                    # there) must never widen what is taken for the candidate's own.
                    self._note(f"cuobjdump could not read {path.name}: no kernel of it counted as the "
                               f"candidate's until it could")
                    continue
                self._binaries[key] = read
                log.debug("kernels in %s (own or not): %s", path, read)
        # Every binary read, also one replaced since: a process keeps the module it loaded, and any
        # build in the candidate's folders is its compile (only suffixed names count).
        return [item for read in self._binaries.values() for item in read.items()]

    def _note(self, note: str) -> None:
        if note not in self._notes:
            self._notes.append(note)


# The file ``load_inline`` writes the CUDA sources to, in the build folder beside the built binary.
EXTENSION_SOURCE = "cuda.cu"


def entry_identifiers(binary: Path, tool: str, source: Path | None = None) -> set[str] | None:
    """Names (suffixed ones only) of the candidate's kernel entry points in a binary's embedded device
    code (``entry_decisions``); None when ``tool`` could not read it."""
    read = entry_decisions(binary, tool, source)
    return None if read is None else {name for name, own in read.items() if own}


def entry_decisions(binary: Path, tool: str, source: Path | None = None) -> dict[str, bool] | None:
    """Each suffixed name in the kernel entry points of a binary's embedded device code, and whether
    every entry bearing it is the candidate's; None when ``tool`` could not read the binary (a
    failure, a timeout): not the same as a binary without any. ``source``: an entry is the
    candidate's only if its code starts in that very file, in every architecture's code the binary
    carries (``entry_files``): not a header a macro of the candidate's renamed a library kernel in,
    not a preprocessed copy its own compiler flags left beside it, and not an architecture the GPU
    never runs."""
    try:
        done = subprocess.run([tool, "-symbols", str(binary)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("cuobjdump failed on %s: %s", binary, exc)
        return None
    if done.returncode != 0 and "does not contain device code" in done.stderr:
        return {}  # a host-only binary: read, and no kernels in it
    if done.returncode != 0:
        log.warning("cuobjdump failed on %s (exit %d): %s", binary, done.returncode, done.stderr.strip()[-300:])
        return None
    symbols = [symbol for symbol in _ENTRY.findall(done.stdout)
               if any(ident.endswith(OWN_SUFFIX) for ident in mangled_identifiers(symbol))]
    own = dict.fromkeys(symbols, True)
    if source is not None and symbols and nvdisasm(tool) is not None:
        files = entry_files(binary, tool)
        if files is None:
            return None
        expected = os.path.realpath(source)
        own = {symbol: bool(files.get(symbol)) and all(f is not None and os.path.realpath(f) == expected
                                                      for f in files[symbol]) for symbol in symbols}
    decisions: dict[str, bool] = {}
    for symbol, mine in own.items():
        for ident in mangled_identifiers(symbol):
            if ident.endswith(OWN_SUFFIX):
                decisions[ident] = decisions.get(ident, True) and mine
    return decisions


_TEXT = re.compile(r"^\s*\.text\.(\S+?):\s*$")
_FILE = re.compile(r'//## File "((?:[^"\\]|\\.)*)"')
_INLINED_AT = re.compile(r'inlined at "((?:[^"\\]|\\.)*)"')


def entry_files(binary: Path, tool: str) -> dict[str, list[str | None]] | None:
    """For each kernel entry of ``binary``'s device code (mangled symbol), the source file its first
    instruction comes from in each architecture's code (cubin) that has it, by the line information
    a ``-lineinfo`` build carries (None for code without any); None when the code could not be read.
    The first line's outermost frame, not any line: a library's kernel template inlines code of the
    file that instantiated it, and an own kernel inlines the headers' device functions."""
    disassembler = nvdisasm(tool)
    if disassembler is None:
        return None
    files: dict[str, list[str | None]] = {}
    with tempfile.TemporaryDirectory(prefix="kernellab-cubin-") as folder:
        try:
            subprocess.run([tool, "-xelf", "all", str(binary.resolve())], cwd=folder, capture_output=True,
                           timeout=60, check=True)
            for cubin in sorted(Path(folder).glob("*.cubin")):
                listing = subprocess.run([disassembler, "-gi", str(cubin)], capture_output=True, text=True,
                                         timeout=120, check=True).stdout
                first: dict[str, str | None] = {}
                current = None
                for line in listing.splitlines():
                    heading = _TEXT.match(line)
                    if heading:
                        current = heading.group(1)
                        first.setdefault(current, None)
                        continue
                    where = _FILE.search(line) if current is not None else None
                    if where and first.get(current) is None:
                        # the outermost frame: code a header inlined into this kernel stands in the
                        # kernel's file, as code of the candidate's inlined into a library template
                        # stands in the library's header
                        frames = _INLINED_AT.findall(line)
                        first[current] = frames[-1] if frames else where.group(1)
                        current = None  # the first line decides
                for symbol, file in first.items():
                    files.setdefault(symbol, []).append(file)
        except (OSError, subprocess.SubprocessError) as exc:
            log.warning("could not read the line information of %s: %s", binary, exc)
            return None
    return files


def nvdisasm(beside: str | None = None) -> str | None:
    """``nvdisasm`` beside the ``cuobjdump`` in use (the toolkit's or Triton's), else on the PATH."""
    if beside is not None:
        sibling = Path(beside).with_name("nvdisasm")
        if sibling.is_file() and os.access(sibling, os.X_OK):
            return str(sibling)
    return shutil.which("nvdisasm")


def cuobjdump() -> str | None:
    """The CUDA toolkit's ``cuobjdump``, or the one Triton ships with its NVIDIA backend."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import triton.backends.nvidia as nvidia

        bundled = Path(nvidia.__file__).parent / "bin" / "cuobjdump"
        return str(bundled) if bundled.is_file() and os.access(bundled, os.X_OK) else None
    except ImportError:
        return None


# Rebuilds already made in this judge process, by what they were made from (``_rebuild_key``): a
# search loop's candidates and a re-evaluation share kernels, and a rebuild takes ~0.5 s a kernel.
_REBUILT: dict[str, bytes] = {}
_REBUILT_MAX = 256
_REBUILT_LOCK = threading.Lock()


def _rebuild_key(source: bytes, metadata: dict, compile_env: Mapping[str, str] | None) -> str:
    """Everything a rebuild depends on: the first stage, the recorded options and target, the
    ``TRITON_*`` variables it runs under (the cache folder aside) and Triton's version."""
    import triton

    env = compile_env if compile_env is not None else os.environ
    variables = sorted((k, v) for k, v in env.items() if k.startswith("TRITON_") and k != "TRITON_CACHE_DIR")
    digest = hashlib.sha256(source)
    digest.update(json.dumps([metadata, variables, triton.__version__], sort_keys=True, default=str).encode())
    return digest.hexdigest()


def rebuilt_binary(first_stage: Path, metadata: dict, compile_env: Mapping[str, str] | None = None) -> bytes:
    """The binary Triton's backend makes, here, of a compile's first stage (``.source``) with the
    options and target its metadata records: each later stage as ``triton.compile`` runs it, under
    the ``TRITON_*`` variables of ``compile_env`` (the child's) where given. The judge's own may
    differ from the child's: Inductor points ``TRITON_PTXAS_PATH`` at torch's ptxas once the judge
    has compiled a ``torch.compile`` baseline, and another ptxas makes another binary. Made once per
    judge process for the same first stage, options and variables (``_REBUILT``)."""
    key = _rebuild_key(Path(first_stage).read_bytes(), metadata, compile_env)
    with _REBUILT_LOCK:
        found = _REBUILT.get(key)
    if found is not None:
        return found
    if compile_env is not None:
        with _triton_environment(compile_env):
            made = _rebuild(first_stage, metadata)
    else:
        made = _rebuild(first_stage, metadata)
    with _REBUILT_LOCK:
        if len(_REBUILT) >= _REBUILT_MAX:
            _REBUILT.pop(next(iter(_REBUILT)))
        _REBUILT[key] = made
    return made


def _rebuild(first_stage: Path, metadata: dict) -> bytes:
    import dataclasses

    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget, Language
    from triton.compiler.compiler import make_backend

    recorded = metadata["target"]
    target = GPUTarget(recorded["backend"], recorded["arch"], recorded["warp_size"])
    backend = make_backend(target)
    fields = {f.name for f in dataclasses.fields(type(backend.parse_options({})))}
    options = backend.parse_options({k: tuple(v) if isinstance(v, list) else v for k, v in metadata.items()
                                     if k in fields})
    context = ir.context()
    ir.load_dialects(context)
    backend.load_dialects(context)
    module = ir.parse_mlir_module(str(first_stage), context)
    module.context = context
    stages: dict = {}
    backend.add_stages(stages, options, Language.TRITON)
    made = {"hash": metadata.get("hash"), "target": target, **options.__dict__,
            **{k: v for k, v in metadata.items() if k.isupper()}, "triton_version": metadata.get("triton_version")}
    for stage in stages.values():
        module = stage(module, made)
    return bytes(module)


_ENVIRONMENT = threading.Lock()


@contextlib.contextmanager
def _triton_environment(env: Mapping[str, str]):
    """The judge's ``TRITON_*`` variables as ``env`` has them (absent where it lacks them) for the
    duration: Triton reads them at each compile step. The cache folder stays the judge's (a rebuild
    runs each stage itself and reads no cache)."""
    def compile_vars(variables: Mapping[str, str]) -> dict[str, str]:
        return {k: v for k, v in variables.items() if k.startswith("TRITON_") and k != "TRITON_CACHE_DIR"}

    with _ENVIRONMENT:
        saved, wanted = compile_vars(os.environ), compile_vars(env)
        try:
            for key in saved.keys() - wanted.keys():
                del os.environ[key]
            os.environ.update(wanted)
            yield
        finally:
            for key in wanted.keys() - saved.keys():
                os.environ.pop(key, None)
            os.environ.update(saved)


@functools.lru_cache(maxsize=64)
def _language_places(file: str) -> frozenset[tuple[int, int]]:
    """The code places of a file of the installed ``triton.language`` (its ``@jit`` functions, such as
    ``tl.sum``'s, are inlined into every kernel that calls them); none for any other file. A location
    only names a file (``JITFunction.file_name`` is writable): it must also fall on that file's code."""
    try:
        import triton.language
    except ImportError:  # pragma: no cover
        return frozenset()
    root = os.path.realpath(os.path.dirname(triton.language.__file__)) + os.sep
    path = os.path.realpath(file)
    return code_places(_read_text(path)) if path.startswith(root) and path.endswith(".py") else frozenset()


def code_places(source: str) -> frozenset[tuple[int, int]]:
    """Where Triton's code generator can place a location for code of this file: the line and column
    of each node inside a function (``def`` lines included). Triton counts columns from the ``def``'s
    own indentation (3.6: 0-based) or from the file's first column (3.7 on: 1-based); both are kept.
    Unparsable text has no places."""
    import ast

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return frozenset()
    places: set[tuple[int, int]] = set()
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        indent = fn.col_offset
        for node in ast.walk(fn):
            line, col = getattr(node, "lineno", None), getattr(node, "col_offset", None)
            if line is not None and col is not None and not isinstance(node, ast.expr_context):
                places.update({(line, col + 1), (line, col - indent)})
    return frozenset(places)


def _read_text(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _settled(entry: Path) -> bool:
    """A Triton cache entry is complete once its group file is written (a compile's last file); an
    entry of launcher or driver modules holds only a shared object."""
    return any(entry.glob("__grp__*.json")) or any(entry.glob("*.so"))


def _unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")
