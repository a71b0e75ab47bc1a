"""The candidate's own kernels, read from real compiles: Triton's cache and a built CUDA binary.

Triton compiles for sm_90 without a GPU (its ptxas is bundled), so the child's renaming and the
judge's reading of the cache are exercised here on the CPU, in a subprocess that installs the
renaming as a candidate child does (``mark_own_compiles``) and compiles three kernels: the
candidate's own (named like a cuBLAS kernel), a library's, and a library's that the candidate
renamed to look suffixed.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kernellab.evaluate.own_identity import (OwnKernelReader, code_places, cuobjdump, entry_decisions, entry_files,
                                             entry_identifiers, mangled_identifiers, nvdisasm)
from kernellab.evaluate.policy import Origin, kernel_origin
from kernellab.sandbox.own_compiles import OWN_SUFFIX, rename_globals, rename_sources

CANDIDATE = '''
import triton
import triton.language as tl


@triton.jit
def ampere_sgemm_128x64_nn(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2, mask=i < n)
'''

LIBRARY = '''
import triton
import triton.language as tl


@triton.jit
def lib_fill(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + i, 1.0, mask=i < n)


@triton.jit
def lib_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n), mask=i < n)
'''

DRIVER = '''
import sys
sys.path.insert(0, sys.argv[1])
from kernellab.sandbox.own_compiles import mark_own_compiles, OWN_SUFFIX
mark_own_compiles(sys.argv[2])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import candidate_mod, library_mod
# The candidate gives a library kernel a suffixed name of its own choosing: the cache knows better.
library_mod.lib_copy.repr = lambda spec: "ampere_sgemm_128x64_nn" + OWN_SUFFIX
target = GPUTarget("cuda", 90, 32)
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
for fn, signature in ((candidate_mod.ampere_sgemm_128x64_nn, sig),
                      (library_mod.lib_fill, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}),
                      (library_mod.lib_copy, sig)):
    print(triton.compile(ASTSource(fn, signature, constexprs={"BLOCK": 128}), target=target).metadata.name)
'''


def compile_like_a_child(folder: Path, files: dict[str, str], candidate: str,
                         **env: str) -> tuple[Path, list[str]]:
    """Write ``files`` (modules and ``driver.py``) into ``folder`` and run the driver in a fresh
    interpreter with the child's renaming installed for ``candidate``: the Triton cache it filled
    and the kernel names it printed. Skips where Triton cannot compile for sm_90."""
    for name, text in files.items():
        (folder / name).write_text(text)
    cache = folder / "triton"
    env = {"PATH": "/usr/bin:/bin", "TRITON_CACHE_DIR": str(cache), "HOME": str(folder),
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), **env}
    run = subprocess.run([sys.executable, str(folder / "driver.py"), str(folder), str(folder / candidate)],
                         capture_output=True, text=True, env=env, timeout=280)
    if run.returncode != 0 and "ptxas" in run.stderr:
        pytest.skip(f"Triton cannot compile for sm_90 here: {run.stderr.strip().splitlines()[-1]}")
    assert run.returncode == 0, run.stderr[-2000:]
    return cache, run.stdout.split()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """A Triton cache filled as a candidate child fills it, and the compiled kernels' names."""
    folder = tmp_path_factory.mktemp("compiles")
    cache, names = compile_like_a_child(folder, {"candidate_mod.py": CANDIDATE, "library_mod.py": LIBRARY,
                                                 "driver.py": DRIVER}, "candidate_mod.py",
                                        TRITON_DEFAULT_FP_FUSION="1")
    return folder, cache, names


def test_the_candidates_triton_kernels_compile_under_the_suffix(compiled):
    _, _, names = compiled
    assert names == ["ampere_sgemm_128x64_nn" + OWN_SUFFIX, "lib_fill", "ampere_sgemm_128x64_nn" + OWN_SUFFIX]


def _without_entries_from(cache: Path, copy: Path, file_name: str) -> Path:
    """A copy of the cache without the compiles whose code comes from ``file_name``."""
    shutil.copytree(cache, copy)
    for meta in copy.glob("*/*.json"):
        if not meta.name.startswith("__grp__") and file_name in meta.with_suffix(".source").read_text():
            shutil.rmtree(meta.parent)
    return copy


def test_the_judge_reads_own_kernels_from_the_cache_by_their_source_file(compiled, tmp_path):
    folder, cache, _ = compiled
    alone = _without_entries_from(cache, tmp_path / "triton", "library_mod.py")  # its own compile only
    identity = OwnKernelReader(str(folder / "candidate_mod.py"), alone, None).identity()
    assert identity.kernels == {"ampere_sgemm_128x64_nn" + OWN_SUFFIX}
    # a file that compiled nothing owns nothing
    assert OwnKernelReader(str(folder / "driver.py"), alone, None).identity().kernels == frozenset()
    # cuBLAS's kernel of that name stays a library kernel; the candidate's compile is its own
    assert kernel_origin("ampere_sgemm_128x64_nn", identity) is Origin.LIBRARY
    assert kernel_origin("ampere_sgemm_128x64_nn" + OWN_SUFFIX, identity) is Origin.OWN


def test_a_name_a_library_kernel_was_compiled_under_is_nobodys(compiled):
    """The third compile is the library's ``lib_copy`` under the name of the candidate's own kernel
    (its ``repr``): a trace record is judged by its name, and that name now stands for both, so it
    is not the candidate's, nor is its own kernel of that name."""
    folder, cache, _ = compiled
    assert OwnKernelReader(str(folder / "candidate_mod.py"), cache, None).identity().kernels == frozenset()


@pytest.mark.skipif(os.geteuid() == 0, reason="permission bits do not stop root: the judge runs as a user")
def test_an_entry_made_unreadable_makes_no_triton_kernel_own(compiled, tmp_path):
    """A compile entry the judge may not read could bear any name (a library kernel's, under the
    candidate's): while one exists, no kernel of the Triton cache is the candidate's."""
    folder, cache, _ = compiled
    alone = _without_entries_from(cache, tmp_path / "triton", "library_mod.py")
    shutil.copytree(next(e for e in cache.iterdir() if e.is_dir()), alone / "hidden")
    (alone / "hidden").chmod(0)
    try:
        identity = OwnKernelReader(str(folder / "candidate_mod.py"), alone, None).identity()
    finally:
        (alone / "hidden").chmod(0o755)
    assert identity.kernels == frozenset() and "permission denied" in identity.notes[0]


def test_a_compile_of_the_name_without_a_first_stage_makes_the_name_nobodys(compiled, tmp_path):
    """A compile from an IR file (``IRSource``) leaves no ``.source``: what it was made from is
    unknown, so the name it bears is not the candidate's, whatever its own compile says."""
    folder, cache, _ = compiled
    alone = _without_entries_from(cache, tmp_path / "triton", "library_mod.py")
    own = next(e for e in alone.iterdir() if any(e.glob("*.source")))
    shutil.copytree(own, alone / "from_ir")
    next((alone / "from_ir").glob("*.source")).unlink()
    assert OwnKernelReader(str(folder / "candidate_mod.py"), alone, None).identity().kernels == frozenset()


def test_a_location_in_tritons_language_must_fall_on_its_code(compiled, tmp_path):
    """A location names a file (``JITFunction.file_name`` is writable): one that names a file of
    ``triton.language`` counts only where that file has code, as the candidate's file does."""
    import triton.language

    folder, cache, _ = compiled
    alone = _without_entries_from(cache, tmp_path / "triton", "library_mod.py")
    source = next(alone.glob("*/*.source"))
    text = source.read_text()
    candidate = str(folder / "candidate_mod.py")
    standard = str(Path(triton.language.__file__).parent / "standard.py")
    first = text.index(f'loc("{candidate}"')
    second = text.index(f'loc("{candidate}"', first + 1)
    end = text.index(")", second)
    source.write_text(text[:second] + f'loc("{standard}":1:1' + text[end:])
    assert OwnKernelReader(candidate, alone, None).identity().kernels == frozenset()


def test_a_library_kernel_renamed_by_the_candidate_is_not_own(compiled, tmp_path):
    """Without the candidate's own compile, the library's under the suffixed name alone."""
    folder, cache, _ = compiled
    copy = _without_entries_from(cache, tmp_path / "triton", "candidate_mod.py")
    assert OwnKernelReader(str(folder / "candidate_mod.py"), copy, None).identity().kernels == frozenset()


WRAPPER = '''
import triton
import triton.language as tl


@triton.jit
def copy_rows(x_ptr, y_ptr, n, BLOCK: tl.constexpr, BODY: tl.constexpr):
    BODY(x_ptr, y_ptr, n, BLOCK)


@triton.jit
def row_sums(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(y_ptr, tl.sum(tl.load(x_ptr + i, mask=i < n, other=0.0), axis=0))
'''

WRAPPER_DRIVER = '''
import sys
sys.path.insert(0, sys.argv[1])
from kernellab.sandbox.own_compiles import mark_own_compiles
mark_own_compiles(sys.argv[2])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import wrapper_mod, library_mod
target = GPUTarget("cuda", 90, 32)
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
print(triton.compile(ASTSource(wrapper_mod.copy_rows, {**sig, "BODY": "constexpr"},
                               constexprs={"BLOCK": 128, "BODY": library_mod.lib_copy}), target=target).metadata.name)
print(triton.compile(ASTSource(wrapper_mod.row_sums, sig, constexprs={"BLOCK": 128}), target=target).metadata.name)
'''


def test_a_kernel_of_the_candidates_whose_body_is_a_library_kernel_is_not_own(tmp_path):
    """A one-line kernel in the candidate's file calls a library's ``@triton.jit`` function handed
    to it as a constexpr, which Triton inlines: its code is the library's. Beside it, a kernel that
    calls ``tl.sum`` (Triton's own ``@jit`` function, inlined too) is the candidate's."""
    cache, names = compile_like_a_child(tmp_path, {"wrapper_mod.py": WRAPPER, "library_mod.py": LIBRARY,
                                                   "driver.py": WRAPPER_DRIVER}, "wrapper_mod.py")
    assert names == ["copy_rows" + OWN_SUFFIX, "row_sums" + OWN_SUFFIX]
    identity = OwnKernelReader(str(tmp_path / "wrapper_mod.py"), cache, None).identity()
    assert identity.kernels == {"row_sums" + OWN_SUFFIX}


SWAPPED = '''
import triton
import triton.language as tl
import library_mod


@triton.jit
def lib_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass
    # Padding: the library's lines land on lines of this file, but no code of it starts there.
    #    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    #    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n), mask=i < n)


lib_copy._unsafe_update_src(library_mod.lib_copy.src)


@triton.jit
def own_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + i, tl.load(x_ptr + i, mask=i < n), mask=i < n)
'''

SWAPPED_DRIVER = '''
import sys
sys.path.insert(0, sys.argv[1])
from kernellab.sandbox.own_compiles import mark_own_compiles
mark_own_compiles(sys.argv[2])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import swapped_mod
target = GPUTarget("cuda", 90, 32)
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
for fn in (swapped_mod.lib_copy, swapped_mod.own_copy):
    print(triton.compile(ASTSource(fn, sig, constexprs={"BLOCK": 128}), target=target).metadata.name)
'''


def test_a_kernel_whose_text_was_swapped_for_a_librarys_is_not_own(tmp_path):
    """``_unsafe_update_src`` gives a do-nothing kernel of the candidate's file a library kernel's
    text: Triton compiles the library's code and writes the candidate's file name into every
    location. The judge reads the candidate's file itself: no code of it starts at those places.
    The same code written in the file (``own_copy``) is the candidate's."""
    cache, names = compile_like_a_child(tmp_path, {"swapped_mod.py": SWAPPED, "library_mod.py": LIBRARY,
                                                   "driver.py": SWAPPED_DRIVER}, "swapped_mod.py")
    assert names == ["lib_copy" + OWN_SUFFIX, "own_copy" + OWN_SUFFIX]
    swapped = next(m for m in cache.glob("*/lib_copy*.source"))
    assert "tt.store" in swapped.read_text() and str(tmp_path / "swapped_mod.py") in swapped.read_text()
    identity = OwnKernelReader(str(tmp_path / "swapped_mod.py"), cache, None).identity()
    assert identity.kernels == {"own_copy" + OWN_SUFFIX}
    # Read against the text the judge scanned: a file rewritten since changes nothing.
    as_scanned = OwnKernelReader(str(tmp_path / "swapped_mod.py"), cache, None, candidate_source=SWAPPED)
    (tmp_path / "swapped_mod.py").write_text(LIBRARY.replace("lib_copy", "lib_kopy") * 2)
    assert as_scanned.identity().kernels == {"own_copy" + OWN_SUFFIX}


# A do-nothing kernel whose compile a route below turns into a library kernel's binary.
DECOY = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef decoy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n    pass\n"

OVERRIDE_DRIVER = '''
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from kernellab.sandbox.own_compiles import mark_own_compiles
mark_own_compiles(sys.argv[2])
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import decoy_mod, library_mod
target = GPUTarget("cuda", 90, 32)
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
library = triton.compile(ASTSource(library_mod.lib_copy, sig, constexprs={"BLOCK": 128}), target=target)
ptx = Path(sys.argv[1]) / "borrowed.ptx"  # the library's code under the decoy's suffixed name
ptx.write_text(library.asm["ptx"].replace("lib_copy", "decoy__kl_own"))
print(triton.compile(ASTSource(decoy_mod.decoy, sig, constexprs={"BLOCK": 128}), target=target,
                     options={"ir_override": str(ptx)}).metadata.name)
'''


def test_a_kernel_whose_later_stage_came_from_a_file_is_not_own(tmp_path):
    """The ``ir_override`` launch option compiles a file's PTX in place of what the candidate's
    ``.source`` generates: the binary is the library's, the ``.source`` a do-nothing kernel's."""
    cache, names = compile_like_a_child(tmp_path, {"decoy_mod.py": DECOY, "library_mod.py": LIBRARY,
                                                   "driver.py": OVERRIDE_DRIVER}, "decoy_mod.py")
    assert names == ["decoy" + OWN_SUFFIX]
    decoy = next(m for m in cache.glob("*/decoy*.source"))
    assert "tt.store" not in decoy.read_text()  # what the judge reads of it does nothing
    assert OwnKernelReader(str(tmp_path / "decoy_mod.py"), cache, None).identity().kernels == frozenset()


HOOK_DRIVER = '''
import sys
sys.path.insert(0, sys.argv[1])
from kernellab.sandbox.own_compiles import mark_own_compiles
mark_own_compiles(sys.argv[2])
import triton
from triton import knobs
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
import decoy_mod, library_mod
target = GPUTarget("cuda", 90, 32)
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
library = triton.compile(ASTSource(library_mod.lib_copy, sig, constexprs={"BLOCK": 128}), target=target)
borrowed = library.asm["ptx"].replace("lib_copy", "decoy__kl_own")


def hook(*args):  # Triton's stage-inspection hook: the library's PTX in place of the decoy's
    if not args:
        return "", ""
    stages = args[1]
    own_ptx = stages["ptx"]
    stages["ptx"] = lambda src, metadata: (own_ptx(src, metadata), borrowed)[1]


knobs.runtime.add_stages_inspection_hook = hook
print(triton.compile(ASTSource(decoy_mod.decoy, sig, constexprs={"BLOCK": 128}), target=target).metadata.name)
'''


def test_a_kernel_whose_later_stages_a_hook_replaced_is_not_own(tmp_path):
    """Triton's stage hook swaps the decoy's PTX for a library kernel's: the ``.source`` the judge
    reads is the decoy's own, the binary is not what it compiles to. The judge compiles the first
    stage again with the recorded options and compares the binaries; an honest kernel's are equal."""
    cache, names = compile_like_a_child(tmp_path, {"decoy_mod.py": DECOY, "library_mod.py": LIBRARY,
                                                   "driver.py": HOOK_DRIVER}, "decoy_mod.py")
    assert names == ["decoy" + OWN_SUFFIX]
    decoy = next(cache.glob("*/decoy*.json"))
    assert "st.global" in decoy.with_suffix(".ptx").read_text()  # the library's copy, under the decoy's name
    assert OwnKernelReader(str(tmp_path / "decoy_mod.py"), cache, None).identity().kernels == frozenset()


def test_code_places_follow_both_column_conventions():
    source = "import triton\n\nclass K:\n    @triton.jit\n    def k(x):\n        y = x + 1\n"
    places = code_places(source)
    assert {(5, 5), (5, 0), (6, 9), (6, 4), (6, 13), (6, 8)} <= places  # def, y =, x + 1 (3.7+ and 3.6)
    assert (1, 1) not in places and (4, 6) in places  # module code no; the decorator is the def's
    assert code_places("def broken(:\n") == frozenset()


def test_mangled_identifiers():
    assert mangled_identifiers("_ZN2ns18add_kernel__kl_ownIfEEvPKT_PS1_i") == ["ns", "add_kernel__kl_own"]
    assert mangled_identifiers("scale_kernel__kl_own") == ["scale_kernel__kl_own"]
    assert mangled_identifiers("_Z6kernelPf") == ["kernel"]


def test_globals_are_renamed_in_the_sources_own_text():
    source = textwrap.dedent("""\
        #include <torch/extension.h>
        #include <cuda_runtime.h>
        // __global__ void in_a_comment(float*)
        template <typename T>
        __global__ void __launch_bounds__(256) add(const T* a, T* b, int n) { }
        extern "C" __global__ void ampere_sgemm_128x64_nn(float* x) { }
        void launch(float* a) { add<float><<<1, 1>>>(a, a, 1); ampere_sgemm_128x64_nn<<<1, 1>>>(a); }
        """)
    renamed = rename_globals(source)
    lines = renamed.splitlines()
    assert lines[:3] == ["#include <torch/extension.h>", "#include <cuda_runtime.h>",
                         "// __global__ void in_a_comment(float*)"]
    assert lines[4] == f"__global__ void __launch_bounds__(256) add{OWN_SUFFIX}(const T* a, T* b, int n) {{ }}"
    assert lines[6] == (f"void launch(float* a) {{ add{OWN_SUFFIX}<float><<<1, 1>>>(a, a, 1); "
                        f"ampere_sgemm_128x64_nn{OWN_SUFFIX}<<<1, 1>>>(a); }}")
    assert "#define" not in renamed  # nothing the preprocessor would carry into a header
    assert rename_globals(renamed) == renamed
    assert rename_globals("int main() { return 0; }") == "int main() { return 0; }"


NVCC = shutil.which("nvcc")


@pytest.mark.skipif(NVCC is None or cuobjdump() is None, reason="needs nvcc and cuobjdump")
def test_extension_entry_points_carry_the_suffix(tmp_path):
    """Build a CUDA binary from renamed sources as the child's load_inline does, and read it back."""
    source = rename_globals(textwrap.dedent("""\
        #include <cuda_runtime.h>
        namespace ns { template <typename T> __global__ void add_kernel(const T* a, T* b, int n) { b[0] += a[0]; } }
        extern "C" __global__ void ampere_sgemm_128x64_nn(float* x) { x[0] = 1; }
        void launch(float* a, float* b) {
            ns::add_kernel<float><<<1, 1>>>(a, b, 1);
            ampere_sgemm_128x64_nn<<<1, 1>>>(a);
        }
        """))
    (tmp_path / "cuda.cu").write_text(source)  # as load_inline names it, beside the binary
    build = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-lineinfo",
                            str(tmp_path / "cuda.cu"), "-o", str(tmp_path / "k.so")],
                           capture_output=True, text=True, timeout=280)
    if build.returncode != 0:
        pytest.skip(f"nvcc could not build here: {build.stderr.strip()[-200:]}")
    found = entry_identifiers(tmp_path / "k.so", cuobjdump())
    assert found == {"add_kernel" + OWN_SUFFIX, "ampere_sgemm_128x64_nn" + OWN_SUFFIX}
    identity = OwnKernelReader("unused.py", None, tmp_path).identity()
    assert kernel_origin(f"void ns::add_kernel{OWN_SUFFIX}<float>(float const*, float*, int)", identity) is Origin.OWN
    assert kernel_origin("ampere_sgemm_128x64_nn", identity) is Origin.LIBRARY


@pytest.mark.skipif(NVCC is None or cuobjdump() is None, reason="needs nvcc and cuobjdump")
def test_a_binary_cuobjdump_could_not_read_counts_for_nothing_and_is_read_again(tmp_path, monkeypatch):
    """A busy host's cuobjdump that fails or times out once proves nothing about the binary: nothing
    of it counts as the candidate's for that judgement (with a note; an unreadable file of the
    candidate's making must not widen the set, as source names would), and the next reads it."""
    source = rename_globals("template <typename T> __global__ void decode_kernel(T* x) { x[0] = T(1); }\n"
                            "void launch(float* x) { decode_kernel<float><<<1, 1>>>(x); }\n")
    (tmp_path / "ext").mkdir()
    (tmp_path / "ext" / "cuda.cu").write_text(source)  # the build's own file, in its folder
    build = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-lineinfo",
                            str(tmp_path / "ext" / "cuda.cu"), "-o", str(tmp_path / "ext" / "k.so")],
                           capture_output=True, text=True, timeout=280)
    if build.returncode != 0:
        pytest.skip(f"nvcc could not build here: {build.stderr.strip()[-200:]}")
    real = cuobjdump()
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "cuobjdump").write_text(f"#!/bin/sh\n[ -e {tmp_path}/failed ] && exec {real} \"$@\"\n"
                                     f"touch {tmp_path}/failed; echo busy >&2; exit 1\n")
    (tools / "cuobjdump").chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    reader = OwnKernelReader("unused.py", None, tmp_path / "ext", source_cuda_names=["decode_kernel"])
    first = reader.identity()
    assert first.kernels == frozenset()
    assert any("could not read k.so" in note for note in first.notes)
    reader.source_cuda_names = frozenset()  # what follows is the binary's own reading, not the source's
    assert reader.identity().kernels == {"decode_kernel" + OWN_SUFFIX}
    assert entry_identifiers(tmp_path / "gone.so", real) is None  # not read: not the same as "no kernels"


def test_a_host_only_binary_has_no_kernels(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    tool = cuobjdump()
    if cc is None or tool is None:
        pytest.skip("needs a C compiler and cuobjdump")
    (tmp_path / "h.c").write_text("int f(void) { return 1; }\n")
    subprocess.run([cc, "-shared", "-fPIC", str(tmp_path / "h.c"), "-o", str(tmp_path / "h.so")], check=True)
    assert entry_identifiers(tmp_path / "h.so", tool) == set()


@pytest.mark.skipif(NVCC is None or cuobjdump() is None, reason="needs nvcc and cuobjdump")
def test_a_build_replaced_in_the_folder_keeps_the_kernels_it_had(tmp_path):
    """The checking child keeps the module it loaded when another build replaces the file (a process
    of the candidate's compiling the same extension again): its kernels are still the candidate's."""
    ext = tmp_path / "ext"
    ext.mkdir()

    def build(source: str) -> None:
        (ext / "cuda.cu").write_text(source)
        done = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-lineinfo",
                               str(ext / "cuda.cu"), "-o", str(ext / "k.so")], capture_output=True, text=True,
                               timeout=280)
        if done.returncode != 0:
            pytest.skip(f"nvcc could not build here: {done.stderr.strip()[-200:]}")

    plain = "template <typename T> __global__ void gqa_kernel(T* x) { x[0] = T(1); }\n" \
            "void launch(float* x) { gqa_kernel<float><<<1, 1>>>(x); }\n"
    build(rename_globals(plain))
    reader = OwnKernelReader("unused.py", None, ext)
    assert reader.identity().kernels == {"gqa_kernel" + OWN_SUFFIX}
    build(plain)  # the same file, built again from the source as written
    identity = reader.identity()
    assert identity.kernels == {"gqa_kernel" + OWN_SUFFIX}
    assert kernel_origin(f"void gqa_kernel{OWN_SUFFIX}<float>(float*)", identity) is Origin.OWN
    assert kernel_origin("void gqa_kernel<float>(float*)", identity) is not Origin.OWN


@pytest.mark.skipif(NVCC is None or cuobjdump() is None, reason="needs nvcc and cuobjdump")
def test_a_library_kernel_declared_ahead_of_its_header_stays_the_librarys(tmp_path):
    """Two sources as load_inline joins them: the first declares CUB's reduction kernels' names as
    ``__global__``, the second includes CUB and reduces with it. The renaming touches the sources'
    own text only, so CUB's kernels compile under their own names and are library kernels."""
    declares = "__global__ void DeviceReduceKernel(int);\n__global__ void DeviceReduceSingleTileKernel(int);\n"
    uses = textwrap.dedent("""\
        #include <cub/device/device_reduce.cuh>
        void sum(const float* x, float* out, int n, void* scratch, size_t bytes) {
            cub::DeviceReduce::Sum(scratch, bytes, x, out, n);
        }
        """)
    joined = "\n".join(rename_sources([declares, uses]))
    (tmp_path / "cuda.cu").write_text(joined)
    build = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-std=c++17", "-arch=sm_90",
                            str(tmp_path / "cuda.cu"), "-o", str(tmp_path / "k.so")],
                           capture_output=True, text=True, timeout=280)
    if build.returncode != 0:
        pytest.skip(f"nvcc could not build CUB here: {build.stderr.strip()[-200:]}")
    assert entry_identifiers(tmp_path / "k.so", cuobjdump()) == set()
    listing = subprocess.run([cuobjdump(), "-symbols", str(tmp_path / "k.so")], capture_output=True, text=True).stdout
    assert "DeviceReduceKernel" in listing  # CUB's, built, under its own name


@pytest.mark.skipif(NVCC is None or cuobjdump() is None or nvdisasm(cuobjdump()) is None,
                    reason="needs nvcc, cuobjdump and nvdisasm")
def test_a_library_kernel_given_the_suffix_by_the_candidates_own_define_stays_the_librarys(tmp_path):
    """The candidate's text defines CUB's kernel name to a suffixed one ahead of CUB's ``#include``
    (nothing of the renaming is involved), beside a kernel of its own: CUB's kernel, whose code
    starts in CUB's header, is not the candidate's, though it inlines the candidate's own operator;
    its own, starting in its file, is, though the first thing it does is a header's inlined code."""
    source = textwrap.dedent(f"""\
        #define DeviceReduceKernel DeviceReduceKernel{OWN_SUFFIX}
        #define DeviceReduceSingleTileKernel DeviceReduceSingleTileKernel{OWN_SUFFIX}
        #include <cub/device/device_reduce.cuh>
        #include "helpers.cuh"
        struct MaxOp {{ __device__ float operator()(float a, float b) const {{ return a > b ? a : b; }} }};
        __global__ void scale(float* x, int n) {{
            float first = load_twice(x);
            int i = threadIdx.x; if (i < n) x[i] *= first;
        }}
        void reduce(const float* x, float* out, int n, void* scratch, size_t bytes) {{
            cub::DeviceReduce::Reduce(scratch, bytes, x, out, n, MaxOp(), 0.0f);
            scale<<<1, 32>>>(out, 1);
        }}
        """)
    ext = tmp_path / "ext"
    ext.mkdir()
    (tmp_path / "include").mkdir()  # a header outside the candidate's folder
    (tmp_path / "include" / "helpers.cuh").write_text(
        "__device__ __forceinline__ float load_twice(const float* p) { return __ldg(p) * 2.0f; }\n")
    (ext / "cuda.cu").write_text(rename_globals(source))
    build = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-std=c++17", "-arch=sm_90", "-lineinfo",
                            "-I", str(tmp_path / "include"), str(ext / "cuda.cu"), "-o", str(ext / "k.so")],
                           capture_output=True, text=True, timeout=280)
    if build.returncode != 0:
        pytest.skip(f"nvcc could not build CUB here: {build.stderr.strip()[-200:]}")
    assert entry_identifiers(ext / "k.so", cuobjdump()) >= {"DeviceReduceKernel" + OWN_SUFFIX}  # the forged name
    assert entry_identifiers(ext / "k.so", cuobjdump(), source=ext / "cuda.cu") == {"scale" + OWN_SUFFIX}
    assert OwnKernelReader("unused.py", None, ext).identity().kernels == {"scale" + OWN_SUFFIX}


LOAD_INLINE_DRIVER = '''
import sys
from torch.utils import cpp_extension
calls = []

def load_inline(name, cpp_sources, cuda_sources=None, sycl_sources=None, functions=None, extra_cflags=None,
                extra_cuda_cflags=None, **rest):  # stands in for the build: what the build would be given
    calls.append((cuda_sources, extra_cuda_cflags))

cpp_extension.load_inline = load_inline
from kernellab.sandbox.own_compiles import mark_own_compiles
mark_own_compiles(sys.argv[1])
cu = "__global__ void add(float* x) {}"
cpp_extension.load_inline("a", "", [cu], None, None, None, ["-O3"])     # flags given by position
cpp_extension.load_inline("b", "", cuda_sources=cu, extra_cuda_cflags=["-O2"])
cpp_extension.load_inline("c", "int f();")                            # no CUDA: nothing added
for sources, flags in calls:
    print(repr(sources), repr(flags))
'''


def test_the_candidates_cuda_builds_carry_line_information_however_the_flags_are_passed(tmp_path):
    """The judge reads which file each kernel's code starts in from the build's line information, so
    every CUDA build through ``load_inline`` must get ``-lineinfo``, beside the candidate's own flags."""
    (tmp_path / "driver.py").write_text(LOAD_INLINE_DRIVER)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"),
           "HOME": str(tmp_path)}
    run = subprocess.run([sys.executable, str(tmp_path / "driver.py"), str(tmp_path / "driver.py")],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    lines = run.stdout.splitlines()
    assert lines[0] == f"['__global__ void add{OWN_SUFFIX}(float* x) {{}}'] ['-O3', '-lineinfo']"
    assert lines[1] == f"'__global__ void add{OWN_SUFFIX}(float* x) {{}}' ['-O2', '-lineinfo']"
    assert lines[2] == "None None"


def _build_in(ext: Path, source: str, *flags: str, headers: dict[str, str] | None = None) -> Path:
    """``source`` built as ``load_inline`` builds it: ``cuda.cu`` in the build folder, beside the binary,
    with line information, the candidate's ``flags`` added, nvcc run in that folder."""
    ext.mkdir(parents=True, exist_ok=True)
    for name, text in (headers or {}).items():
        (ext.parent / name).write_text(text)  # outside the build folder, as a library's header is
    (ext / "cuda.cu").write_text(rename_globals(source))
    build = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-std=c++17", "-lineinfo", *flags,
                            "-I", str(ext.parent), str(ext / "cuda.cu"), "-o", str(ext / "k.so")], cwd=ext,
                           capture_output=True, text=True, timeout=280)
    if build.returncode != 0:
        pytest.skip(f"nvcc could not build this here: {build.stderr.strip()[-200:]}")
    return ext / "k.so"


NEEDS_LINE_INFO = pytest.mark.skipif(NVCC is None or cuobjdump() is None or nvdisasm(cuobjdump()) is None,
                                     reason="needs nvcc, cuobjdump and nvdisasm")

LIBRARY_HEADER = """
template <int N> __global__ void lib_scale(float* x) { x[threadIdx.x] *= N; }
template <int N> void lib_launch(float* x) { lib_scale<N><<<1, 32>>>(x); }
"""


@NEEDS_LINE_INFO
def test_a_decoy_of_the_forged_name_makes_the_name_nobodys(tmp_path):
    """The candidate's own do-nothing kernel bears the name its ``#define`` gave a library kernel: the
    trace shows one name for both, so it is not the candidate's."""
    binary = _build_in(tmp_path / "ext", f"""\
        #define lib_scale lib_scale{OWN_SUFFIX}
        #include "lib.cuh"
        __global__ void lib_scale{OWN_SUFFIX}(int) {{ }}  // written suffixed: the renaming leaves it
        __global__ void mine(float* x) {{ x[threadIdx.x] += 1.0f; }}
        void run(float* x) {{ lib_launch<2>(x); lib_scale{OWN_SUFFIX}<<<1, 1>>>(0); mine<<<1, 32>>>(x); }}
        """, "-arch=sm_90", headers={"lib.cuh": LIBRARY_HEADER})
    read = entry_decisions(binary, cuobjdump(), source=binary.parent / "cuda.cu")
    assert read == {"lib_scale" + OWN_SUFFIX: False, "mine" + OWN_SUFFIX: True}
    assert OwnKernelReader("unused.py", None, binary.parent).identity().kernels == {"mine" + OWN_SUFFIX}


@NEEDS_LINE_INFO
def test_flags_that_attribute_headers_to_a_preprocessed_copy_do_not_make_them_own(tmp_path):
    """``-Xcompiler -P --keep``: no line markers, so every line, the library header's too, is
    attributed to the preprocessed copy nvcc keeps in the build folder. Only ``cuda.cu`` itself counts."""
    binary = _build_in(tmp_path / "ext", f"""\
        #define lib_scale lib_scale{OWN_SUFFIX}
        #include "lib.cuh"
        void run(float* x) {{ lib_launch<2>(x); }}
        """, "-arch=sm_90", "-Xcompiler", "-P", "--keep", headers={"lib.cuh": LIBRARY_HEADER})
    files = entry_files(binary, cuobjdump())
    assert files and all(os.path.realpath(f or "/") != os.path.realpath(binary.parent / "cuda.cu")
                         for found in files.values() for f in found)
    assert entry_identifiers(binary, cuobjdump(), source=binary.parent / "cuda.cu") == set()


@NEEDS_LINE_INFO
def test_a_kernel_is_own_only_if_it_is_in_every_architectures_code(tmp_path):
    """For sm_80 only, the candidate writes an empty specialisation of the library kernel in its own
    file; the sm_90 code (what an H100 runs) is the library's, under the same symbol."""
    binary = _build_in(tmp_path / "ext", f"""\
        #define lib_scale lib_scale{OWN_SUFFIX}
        #include "lib.cuh"
        #if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
        template <> __global__ void lib_scale{OWN_SUFFIX}<2>(float* x) {{ }}  // suffixed: the renaming leaves it
        #endif
        void run(float* x) {{ lib_launch<2>(x); }}
        """, "-gencode=arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=sm_90",
        headers={"lib.cuh": LIBRARY_HEADER})
    files = entry_files(binary, cuobjdump())
    (found,) = [v for k, v in files.items() if "lib_scale" in k]
    assert len(found) == 2 and os.path.realpath(found[0]) != os.path.realpath(found[1])  # one per cubin
    assert entry_identifiers(binary, cuobjdump(), source=binary.parent / "cuda.cu") == set()
