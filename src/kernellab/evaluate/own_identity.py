"""Which kernels in a trace are the candidate's own: by what its compile produced, never by name.

The child compiles the candidate's kernels under ``<name>__kl_own`` (``sandbox/own_compiles.py``), a
suffix no precompiled library kernel carries. The judge does not take the child's word for it: it
reads what the candidate's compiles left on disk in the child's own folders.

- Triton: each kernel in the child's Triton cache (``TRITON_CACHE_DIR``) has a metadata ``.json``
  with the compiled kernel's name and a ``.source`` (the Triton IR the compile started from) whose
  first location is the file the kernel's function was defined in. A kernel counts only if that file
  is the candidate's: a library's Triton kernel compiled in the same process (Inductor's, or one the
  candidate renamed) does not.
- CUDA C++: the entry symbols of the extensions it built (``TORCH_EXTENSIONS_DIR``), read with
  ``cuobjdump -symbols`` (the CUDA toolkit's, or the one Triton ships), each counted only if its
  first instruction comes from a file in that folder (the line information of its ``-lineinfo``
  build, read with ``nvdisasm -g``): the suffix is public, and a ``#define`` in the candidate's own
  text could give it to a library kernel compiled from a header. Where no ``cuobjdump`` exists, the
  ``__global__`` names of its scanned sources stand in (a weaker proof: source is not identity,
  though the suffix still keeps precompiled library kernels out).

Under the Triton interpreter nothing is compiled: a launch is the candidate's when the code the
interpreter ran comes from the candidate's file (``sandbox.evidence.new_launch_log``).
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from kernellab.sandbox.own_compiles import OWN_SUFFIX

log = logging.getLogger(__name__)

_LOC = re.compile(r'loc\("((?:[^"\\]|\\.)*)":\d+:\d+\)')
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
                 extensions: str | os.PathLike[str] | None, source_cuda_names: Iterable[str] = ()):
        self.candidate_file = str(candidate_file)
        self.triton_cache = Path(triton_cache) if triton_cache else None
        self.extensions = Path(extensions) if extensions else None
        self.source_cuda_names = frozenset(source_cuda_names)
        self._entries: dict[Path, tuple[str | None, bool]] = {}  # entry folder -> (own kernel name, complete)
        self._binaries: dict[tuple[Path, float, int], frozenset[str]] = {}
        self._notes: list[str] = []

    def identity(self) -> OwnIdentity:
        return OwnIdentity(frozenset(self._triton_kernels() | self._extension_kernels()), tuple(self._notes))

    # --- Triton ----------------------------------------------------------------------------------
    def _triton_kernels(self) -> set[str]:
        if self.triton_cache is None or not self.triton_cache.is_dir():
            return set()
        for entry in self.triton_cache.iterdir():
            known = self._entries.get(entry)
            if known is None or not known[1]:
                settled = _settled(entry)  # read before the entry, so a late file is read next time
                self._entries[entry] = (self._triton_entry(entry), settled)
        return {name for name, _ in self._entries.values() if name}

    def _triton_entry(self, entry: Path) -> str | None:
        for meta in entry.glob("*.json"):
            if meta.name.startswith("__grp__"):
                continue
            try:
                name = json.loads(meta.read_text()).get("name")
                source = meta.with_suffix(".source").read_text(errors="replace")
            except (OSError, ValueError):
                continue
            where = _LOC.search(source)
            if isinstance(name, str) and name.endswith(OWN_SUFFIX) and where \
                    and _unescape(where.group(1)) == self.candidate_file:
                return name
        return None

    # --- CUDA extensions -----------------------------------------------------------------------------
    def _extension_kernels(self) -> set[str]:
        if self.extensions is None or not self.extensions.is_dir():
            return set()
        binaries = [p for p in self.extensions.rglob("*.so") if p.is_file()]
        if not binaries:
            return set().union(*self._binaries.values())
        tool = cuobjdump()
        if tool is not None and nvdisasm(tool) is None:
            self._note("no nvdisasm here: the candidate's CUDA kernels were recognised by their names alone, "
                       "not by the file their code comes from")
        if tool is None:
            self._note("no cuobjdump here: the candidate's CUDA kernels were recognised by their source names")
            return {n + OWN_SUFFIX for n in self.source_cuda_names}
        for path in binaries:
            stat = path.stat()
            key = (path, stat.st_mtime, stat.st_size)
            if key not in self._binaries:
                read = entry_identifiers(path, tool, within=self.extensions)
                if read is None:  # read again next time (a busy host's timeout is no proof of anything)
                    # Nothing of it counts meanwhile: an unreadable file (one the candidate wrote
                    # there) must never widen what is taken for the candidate's own.
                    self._note(f"cuobjdump could not read {path.name}: no kernel of it counted as the "
                               f"candidate's until it could")
                    continue
                self._binaries[key] = frozenset(read)
                log.debug("own kernels in %s: %s", path, sorted(read))
        # Every binary read, also one replaced since: a process keeps the module it loaded, and any
        # build in the candidate's folders is its compile (only suffixed names count).
        return set().union(*self._binaries.values())

    def _note(self, note: str) -> None:
        if note not in self._notes:
            self._notes.append(note)


def entry_identifiers(binary: Path, tool: str, within: Path | None = None) -> set[str] | None:
    """Names (suffixed ones only) of the kernel entry points in a binary's embedded device code; None
    when ``tool`` could not read it (a failure, a timeout): not the same as a binary without any.
    ``within``: only entries whose code starts in a file under that folder (``entry_files``: the
    candidate's generated sources, not a header a macro of its own renamed a library kernel in)."""
    try:
        done = subprocess.run([tool, "-symbols", str(binary)], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        log.warning("cuobjdump failed on %s: %s", binary, exc)
        return None
    if done.returncode != 0 and "does not contain device code" in done.stderr:
        return set()  # a host-only binary: read, and no kernels in it
    if done.returncode != 0:
        log.warning("cuobjdump failed on %s (exit %d): %s", binary, done.returncode, done.stderr.strip()[-300:])
        return None
    symbols = [symbol for symbol in _ENTRY.findall(done.stdout)
               if any(ident.endswith(OWN_SUFFIX) for ident in mangled_identifiers(symbol))]
    if within is not None and symbols and nvdisasm(tool) is not None:
        files = entry_files(binary, tool)
        if files is None:
            return None
        root = os.path.realpath(within) + os.sep
        symbols = [symbol for symbol in symbols if os.path.realpath(files.get(symbol) or "/").startswith(root)]
    return {ident for symbol in symbols for ident in mangled_identifiers(symbol) if ident.endswith(OWN_SUFFIX)}


_TEXT = re.compile(r"^\s*\.text\.(\S+?):\s*$")
_FILE = re.compile(r'//## File "((?:[^"\\]|\\.)*)"')
_INLINED_AT = re.compile(r'inlined at "((?:[^"\\]|\\.)*)"')


def entry_files(binary: Path, tool: str) -> dict[str, str | None] | None:
    """For each kernel entry of ``binary``'s device code (mangled symbol), the source file its first
    instruction comes from, by the line information a ``-lineinfo`` build carries (None for an
    entry without any); None when the code could not be read. The first line's outermost frame,
    not any line: a library's kernel template inlines code of the file that instantiated it, and an
    own kernel inlines the headers' device functions."""
    disassembler = nvdisasm(tool)
    if disassembler is None:
        return None
    with tempfile.TemporaryDirectory(prefix="kernellab-cubin-") as folder:
        try:
            subprocess.run([tool, "-xelf", "all", str(binary.resolve())], cwd=folder, capture_output=True,
                           timeout=60, check=True)
            files: dict[str, str | None] = {}
            for cubin in sorted(Path(folder).glob("*.cubin")):
                listing = subprocess.run([disassembler, "-gi", str(cubin)], capture_output=True, text=True,
                                         timeout=120, check=True).stdout
                current = None
                for line in listing.splitlines():
                    heading = _TEXT.match(line)
                    if heading:
                        current = heading.group(1)
                        files.setdefault(current, None)
                        continue
                    where = _FILE.search(line) if current is not None else None
                    if where and files.get(current) is None:
                        # the outermost frame: code a header inlined into this kernel stands in the
                        # kernel's file, as code of the candidate's inlined into a library template
                        # stands in the library's header
                        frames = _INLINED_AT.findall(line)
                        files[current] = frames[-1] if frames else where.group(1)
                        current = None  # the first line decides
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


def _settled(entry: Path) -> bool:
    """A Triton cache entry is complete once its group file is written (a compile's last file); an
    entry of launcher or driver modules holds only a shared object."""
    return any(entry.glob("__grp__*.json")) or any(entry.glob("*.so"))


def _unescape(text: str) -> str:
    return text.replace('\\"', '"').replace("\\\\", "\\")
