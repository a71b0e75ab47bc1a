"""Making the candidate's own compiled kernels recognisable in a GPU trace, whatever they are named.

A profiler trace names kernels, and a name proves nothing: a ``@triton.jit`` function may be called
``nvjet_hsh_...`` or ``vectorized_elementwise_kernel``, and the cuBLAS or ATen kernel of that name
would then pass as the candidate's. So every kernel the candidate's own compile produces gets
``OWN_SUFFIX`` appended to its symbol name, here in the child, before the candidate's module runs:

- Triton: kernels whose Python function is defined in the candidate's file are compiled under
  ``<name>__kl_own`` (the name ``triton.jit(repr=...)`` would set; the source, the cache key and
  the arguments are untouched).
- CUDA C++: each ``__global__`` function in the ``cuda_sources`` handed to ``load_inline`` is renamed
  in the source's own text, wherever its name stands as a word (library headers are never touched:
  no macro carries the new name into them), and built with line information, from which the judge
  reads which file each kernel's code starts in (the suffix alone is public: a candidate's own
  ``#define`` could give it to a library kernel).

Precompiled library kernels (cuBLAS, cuDNN, ATen) have names fixed when the library was built, and
none carries the suffix, so a library kernel can no longer be taken for the candidate's. The judge
does not trust this process to have renamed anything: it counts a kernel as the candidate's only if
its suffixed name is also a kernel the candidate's compile left on disk (the Triton cache entry of a
function from the candidate's file, or an entry symbol of its extension), see
``evaluate/own_identity.py``. A candidate that undoes the renaming only makes its own kernels count
as library kernels.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable
from typing import Any

OWN_SUFFIX = "__kl_own"

_CPP_NOISE = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
_GLOBAL = re.compile(r"\b__global__\b")


def blank_cpp_noise(code: str) -> str:
    """Comments and string literals replaced by spaces (newlines kept, so offsets still match)."""
    return _CPP_NOISE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), code)


def global_names(code: str) -> set[str]:
    """Names of the ``__global__`` functions in a C++/CUDA source."""
    code = blank_cpp_noise(code)
    names = set()
    for m in _GLOBAL.finditer(code):
        head = code[m.end(): m.end() + 600]
        head = re.sub(r"__launch_bounds__\s*\([^()]*\)|__attribute__\s*\(\([^()]*\)\)", " ", head)
        paren = head.find("(")
        ident = re.search(r"([A-Za-z_]\w*)\s*(?:<[^<>]*>)?\s*$", head[:paren]) if paren >= 0 else None
        if ident:
            names.add(ident.group(1))
    return names


def rename_globals(code: str, names: Iterable[str] | None = None) -> str:
    """``code`` with each ``__global__`` function's name written ``<name>__kl_own`` wherever it stands
    as a word of this text (outside comments and string literals). The text is renamed, not what
    the preprocessor makes of it: a ``#define`` would rename the same name inside every header
    included after it, and a source declaring a library's kernel names ahead of that library's
    ``#include`` made the library's kernels compile as the candidate's own."""
    names = sorted(global_names(code) if names is None else set(names))
    names = [n for n in names if not n.endswith(OWN_SUFFIX)]
    if not names:
        return code
    word = re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")
    pieces, last = [], 0
    for m in word.finditer(blank_cpp_noise(code)):  # offsets match: blanking keeps every character's place
        pieces += [code[last:m.end()], OWN_SUFFIX]
        last = m.end()
    return "".join(pieces) + code[last:]


def rename_sources(sources: Iterable[str]) -> list[str]:
    """``load_inline``'s list of CUDA sources as the child builds them: each renamed for every
    ``__global__`` of any of them (``load_inline`` joins them into one file)."""
    sources = list(sources)
    names = set().union(*(global_names(source) for source in sources))
    return [rename_globals(source, names) for source in sources]


class _Installed:
    path: str | None = None


_INSTALLED = _Installed()


def mark_own_compiles(candidate_path: str, interpret: bool = False) -> None:
    """Install both renamings for kernels of ``candidate_path`` (once per process, before its import).
    Under the Triton interpreter nothing is compiled, and Triton's compiler is left unimported."""
    first = _INSTALLED.path is None
    _INSTALLED.path = candidate_path
    if first and not interpret:
        _rename_triton_kernels()
        _rename_extension_kernels()


def _defined_in_candidate(jit_fn: Any) -> bool:
    fn = getattr(jit_fn, "fn", None)
    code = getattr(fn, "__code__", None)
    return code is not None and _INSTALLED.path is not None and code.co_filename == _INSTALLED.path


def _rename_triton_kernels() -> None:
    try:
        from triton.compiler import code_generator
    except Exception:  # noqa: BLE001 - no compiler here: nothing is renamed, so nothing counts as own
        return
    original = code_generator.ast_to_ttir

    def ast_to_ttir(fn, *args, **kwargs):
        if not _defined_in_candidate(fn):
            return original(fn, *args, **kwargs)
        named = fn.repr  # JITFunction.repr(specialization) is the kernel's symbol name

        def own_name(specialization):
            name = named(specialization)
            return name if name.endswith(OWN_SUFFIX) else name + OWN_SUFFIX

        fn.repr = own_name
        try:
            return original(fn, *args, **kwargs)
        finally:
            del fn.repr

    from kernellab.sandbox.concealment import detached

    # The helpers it calls stay reachable through it; they decide nothing: the judge counts a kernel
    # as own only from what the compile left on disk (``evaluate/own_identity.py``).
    code_generator.ast_to_ttir = detached(ast_to_ttir, _defined_in_candidate=_defined_in_candidate,
                                          OWN_SUFFIX=OWN_SUFFIX)


def _rename_extension_kernels() -> None:
    try:
        from torch.utils import cpp_extension
    except ImportError:  # pragma: no cover
        return
    original = cpp_extension.load_inline
    signature = inspect.signature(original)

    def load_inline(name, cpp_sources, cuda_sources=None, *args, **kwargs):
        if "cuda_sources" in kwargs:
            cuda_sources = kwargs.pop("cuda_sources")
        if isinstance(cuda_sources, str):
            cuda_sources = rename_globals(cuda_sources)
        elif cuda_sources is not None:
            cuda_sources = rename_sources(cuda_sources)
        if cuda_sources is not None:  # line info: where each kernel's code comes from
            bound = signature.bind(name, cpp_sources, cuda_sources, *args, **kwargs)
            flags = bound.arguments.get("extra_cuda_cflags") or []
            bound.arguments["extra_cuda_cflags"] = [*flags, "-lineinfo"]
            return original(*bound.args, **bound.kwargs)
        return original(name, cpp_sources, cuda_sources, *args, **kwargs)

    from kernellab.sandbox.concealment import detached

    cpp_extension.load_inline = detached(load_inline, rename_globals=rename_globals, rename_sources=rename_sources)
