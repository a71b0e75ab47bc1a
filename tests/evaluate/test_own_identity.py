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

from kernellab.evaluate.own_identity import (OwnKernelReader, cuobjdump, entry_identifiers, mangled_identifiers,
                                             nvdisasm)
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


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    """A Triton cache filled as a candidate child fills it, and the compiled kernels' names."""
    folder = tmp_path_factory.mktemp("compiles")
    (folder / "candidate_mod.py").write_text(CANDIDATE)
    (folder / "library_mod.py").write_text(LIBRARY)
    (folder / "driver.py").write_text(DRIVER)
    cache = folder / "triton"
    env = {"PATH": "/usr/bin:/bin", "TRITON_CACHE_DIR": str(cache), "TRITON_DEFAULT_FP_FUSION": "1",
           "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), "HOME": str(folder)}
    run = subprocess.run([sys.executable, str(folder / "driver.py"), str(folder), str(folder / "candidate_mod.py")],
                         capture_output=True, text=True, env=env, timeout=280)
    if run.returncode != 0 and "ptxas" in run.stderr:
        pytest.skip(f"Triton cannot compile for sm_90 here: {run.stderr.strip().splitlines()[-1]}")
    assert run.returncode == 0, run.stderr[-2000:]
    return folder, cache, run.stdout.split()


def test_the_candidates_triton_kernels_compile_under_the_suffix(compiled):
    _, _, names = compiled
    assert names == ["ampere_sgemm_128x64_nn" + OWN_SUFFIX, "lib_fill", "ampere_sgemm_128x64_nn" + OWN_SUFFIX]


def test_the_judge_reads_own_kernels_from_the_cache_by_their_source_file(compiled):
    folder, cache, _ = compiled
    identity = OwnKernelReader(str(folder / "candidate_mod.py"), cache, None).identity()
    assert identity.kernels == {"ampere_sgemm_128x64_nn" + OWN_SUFFIX}
    # a file that compiled nothing owns nothing
    assert OwnKernelReader(str(folder / "driver.py"), cache, None).identity().kernels == frozenset()
    # cuBLAS's kernel of that name stays a library kernel; the candidate's compile is its own
    assert kernel_origin("ampere_sgemm_128x64_nn", identity) is Origin.LIBRARY
    assert kernel_origin("ampere_sgemm_128x64_nn" + OWN_SUFFIX, identity) is Origin.OWN


def test_a_library_kernel_renamed_by_the_candidate_is_not_own(compiled, tmp_path):
    """The third compile carries the candidate's suffixed name, but its source is the library's file:
    without that entry's provenance check the identity would be the same name twice, so remove the
    candidate's own entry and look again."""
    folder, cache, _ = compiled
    copy = tmp_path / "triton"
    shutil.copytree(cache, copy)
    for meta in copy.glob("*/*.json"):
        if not meta.name.startswith("__grp__") and "candidate_mod.py" in meta.with_suffix(".source").read_text():
            shutil.rmtree(meta.parent)
    assert OwnKernelReader(str(folder / "candidate_mod.py"), copy, None).identity().kernels == frozenset()


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
    (tmp_path / "k.cu").write_text(source)
    build = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-lineinfo", str(tmp_path / "k.cu"),
                            "-o", str(tmp_path / "k.so")], capture_output=True, text=True, timeout=280)
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
    (tmp_path / "ext" / "k.cu").write_text(source)  # the build's own file, in its folder
    build = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-lineinfo",
                            str(tmp_path / "ext" / "k.cu"), "-o", str(tmp_path / "ext" / "k.so")],
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
        (ext / "k.cu").write_text(source)
        done = subprocess.run([NVCC, "-shared", "-Xcompiler", "-fPIC", "-arch=sm_90", "-lineinfo",
                               str(ext / "k.cu"), "-o", str(ext / "k.so")], capture_output=True, text=True, timeout=280)
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
    assert entry_identifiers(ext / "k.so", cuobjdump(), within=ext) == {"scale" + OWN_SUFFIX}
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
