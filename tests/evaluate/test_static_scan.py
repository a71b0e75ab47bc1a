"""The static scan on real candidate code: each rule's exploit, and the legitimate look-alikes it
must let through (a false positive fails a correct kernel)."""

from __future__ import annotations

import sysconfig
import textwrap
from pathlib import Path

import pytest

from kernellab.evaluate.scan_rules import RULES
from kernellab.evaluate.static_scan import OwnKernels, scan_candidate
from kernellab.evaluate.verdict import ViolationKind as K
from kernellab.tasks.model import Policy

STRICT, KB, OFF = Policy.STRICT, Policy.KERNELBENCH, Policy.OFF

HEADER = '''
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _scale_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # reads n, writes n
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(y_ptr + offs, tl.exp(x) * 2.0 + tl.sum(x, axis=0), mask=mask)


def _scale(x):
    y = torch.empty_like(x)
    n = x.numel()
    _scale_kernel[(triton.cdiv(n, 1024),)](x, y, n, BLOCK=1024)
    return y
'''


def candidate(forward: str, prelude: str = "", init: str = "pass") -> str:
    """HEADER, then ``prelude``, then a ModelNew whose forward(self, x) has the given body."""
    body = textwrap.indent(textwrap.dedent(forward).strip(), " " * 8)
    init_body = textwrap.indent(textwrap.dedent(init).strip(), " " * 8)
    return (HEADER + textwrap.dedent(prelude) + "\n\nclass ModelNew(nn.Module):\n"
            "    def __init__(self):\n        super().__init__()\n" + init_body + "\n\n"
            "    def forward(self, x):\n" + body + "\n")


def scan(source: str, policy: Policy = STRICT):
    return scan_candidate(textwrap.dedent(source), "cand.py", policy)


def rules(result) -> set[str]:
    return {v.detail.rsplit("[", 1)[1].rstrip("]") for v in result.violations}


def kinds(result) -> set[K]:
    return {v.kind for v in result.violations}


def assert_clean(result) -> None:
    assert result.syntax_error is None
    assert result.violations == [], [v.detail for v in result.violations]


# --- legitimate candidates ------------------------------------------------------------------------
def test_plain_triton_candidate_passes_and_reports_its_kernels():
    result = scan(candidate("return _scale(x)"))
    assert_clean(result)
    assert result.own_kernels == OwnKernels(triton=frozenset({"_scale_kernel"}))
    assert result.language == "triton" and result.cpp_sources == []


def test_views_allocations_and_metadata_are_not_library_compute():
    forward = '''
        logger.debug("shape %s", x.shape)
        seen = set()
        seen.add(x.dtype)
        assert x.is_contiguous() and x.dim() == 2 and x.stride(1) == 1
        M, N = x.shape
        rows = x.contiguous().view(-1, N).reshape(M, N).to(torch.float32).float().half().t().transpose(0, 1)
        w = self.weight.detach().unsqueeze(0).expand(M, N).squeeze(0).permute(0, 1).flatten()
        out = torch.empty((M, N), dtype=torch.float16, device=x.device)
        scratch = torch.zeros(M, device=x.device) + 0 if False else torch.zeros(M, device=x.device)
        idx = torch.arange(N, device=x.device)
        eps = torch.finfo(x.dtype).eps * math.sqrt(N)
        props = torch.cuda.get_device_properties(torch.cuda.current_device())
        stream = torch.cuda.current_stream()
        block = min(triton.next_power_of_2(N), 4096)
        nbytes = out.numel() * out.element_size() + x.data_ptr() % 16
        name = "-".join([str(M), str(N)])
        tag = re.compile("a").sub("b", name)
        total = np.prod(x.shape)
        out.copy_(rows.clone())
        out.fill_(0).zero_()
        both = torch.cat([out, out]).split(M)
        return _scale(rows).view(x.shape)
    '''
    prelude = '''
        import logging
        import math
        import re

        import numpy as np

        logger = logging.getLogger(__name__)
    '''
    assert_clean(scan(candidate(forward, prelude, init="self.weight = nn.Parameter(torch.randn(4))")))


def test_autotune_heuristics_and_helper_jit_functions_are_own_kernels():
    source = '''
        import torch
        import triton
        import triton.language as tl
        from triton import jit


        @jit
        def _square(x):
            return x * x


        @triton.autotune(configs=[triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})], key=["n"])
        @triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
        @triton.jit
        def sumsq_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(out_ptr, tl.sum(_square(tl.load(x_ptr + offs, mask=offs < n)), axis=0))


        class ModelNew(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                out = torch.empty(1, device=x.device, dtype=torch.float32)
                sumsq_kernel[(1,)](x, out, x.numel())
                return out
    '''
    result = scan(source)
    assert_clean(result)
    assert result.own_kernels.triton == {"_square", "sumsq_kernel"}


def test_optional_imports_and_reraising_handlers_are_not_fallbacks():
    prelude = '''
        import logging

        try:
            from triton.language.extra.libdevice import rsqrt
        except ImportError:
            from triton.language.extra.cuda.libdevice import rsqrt

        logger = logging.getLogger(__name__)
    '''
    forward = '''
        try:
            import numpy
        except ImportError:
            numpy = None
        try:
            y = _scale(x)
        except RuntimeError as exc:
            logger.error("launch failed: %s", exc)
            raise
        try:
            return y
        finally:
            pass
    '''
    assert_clean(scan(candidate(forward, prelude)))


CUDA_CANDIDATE = r'''
import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# No file access here: the sources live in the strings below.
cuda_header = """
#include <cuda_runtime.h>
#include <ATen/cuda/CUDAContext.h>
"""

cuda_kernels = cuda_header + """
// a comment that mentions fopen(path) and std::thread must not count
template <typename T>
__global__ void __launch_bounds__(256) add_kernel(const T* a, const T* b, T* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a[i] + b[i];
}

extern "C" __global__ void scale_kernel(float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}

torch::Tensor add(torch::Tensor a, torch::Tensor b) {
    TORCH_CHECK(a.is_cuda(), "cannot open(a) on the host");
    auto out = torch::empty_like(a);
    int n = a.numel();
    auto stream = at::cuda::getCurrentCUDAStream();
    add_kernel<float><<<(n + 255) / 256, 256, 0, stream>>>(a.data_ptr<float>(), b.data_ptr<float>(),
                                                          out.data_ptr<float>(), n);
    return out;
}
"""

cpp_decls = ["torch::Tensor add(torch::Tensor a, torch::Tensor b);"]

_ext = load_inline(name="add_ext", cpp_sources=cpp_decls, cuda_sources=cuda_kernels, functions=["add"],
                   verbose=False)


class ModelNew(nn.Module):
    def forward(self, a, b):
        return _ext.add(a.contiguous(), b.contiguous())
'''


ALLOC_LINE = "    auto out = torch::empty_like(a);"


def test_cuda_candidate_with_sources_in_module_strings():
    result = scan(CUDA_CANDIDATE)
    assert_clean(result)
    assert result.own_kernels.cuda == {"add_kernel", "scale_kernel"}
    assert result.language == "cuda"
    assert len(result.cpp_sources) == 2
    assert any("add_kernel<float><<<" in s for s in result.cpp_sources)


def test_kernelbench_style_extension_held_by_the_module():
    """Extension functions may be named like tensor methods; they are the candidate's own code."""
    source = CUDA_CANDIDATE.replace("_ext = load_inline(", "def _build():\n    global _EXT\n    _EXT = load_inline(")
    source = source.replace("verbose=False)", "verbose=False)\n    return _EXT")
    source = source.replace("    def forward(self, a, b):\n        return _ext.add(a.contiguous(), b.contiguous())",
                            "    def __init__(self):\n        super().__init__()\n        self.ops = _build()\n"
                            "        self.kernels = self.ops\n\n"
                            "    def forward(self, a, b):\n        return self.kernels.add(a, b)")
    assert "self.kernels.add(a, b)" in source
    assert_clean(scan(source))


def test_autograd_function_with_a_backward_kernel_passes():
    prelude = '''
        class _Scale(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return _scale(x)

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return _scale(grad.contiguous()) if ctx.needs_input_grad[0] else None
    '''
    assert_clean(scan(candidate("return _Scale.apply(x)", prelude)))


def test_library_layers_may_hold_weights_but_not_run():
    init = "self.linear = nn.Linear(4, 4)"
    assert_clean(scan(candidate("return _scale(x + 0 if False else x) if self.linear.weight is not None else x",
                                init=init), KB))
    assert_clean(scan(candidate("w = self.linear.weight.contiguous()\nreturn _scale(w)", init=init)))
    result = scan(candidate("return _scale(self.linear(x))", init=init))
    assert rules(result) == {"own_compute_only"} and "torch.nn.Linear" in result.violations[0].detail


SUITE = Path(__file__).resolve().parents[2] / "src" / "kernellab" / "tasks" / "suite"


@pytest.mark.parametrize("baseline", sorted(SUITE.rglob("baseline.py")), ids=lambda p: p.parent.name)
def test_the_suite_baseline_kernels_pass_strict(baseline):
    """The built-in suite's baselines are real, legitimate kernels: none may trip a rule."""
    result = scan_candidate(baseline.read_text(), baseline.name, STRICT)
    assert_clean(result)
    assert not result.own_kernels.empty


# --- own kernel required --------------------------------------------------------------------------
def test_a_file_without_kernels_breaks_strict_and_kernelbench_only():
    source = '''
        import torch.nn as nn
        import torch.nn.functional as F

        class ModelNew(nn.Module):
            def forward(self, x):
                return F.relu(x)
    '''
    assert rules(scan(source)) == {"own_kernel_required", "own_compute_only"}
    assert rules(scan(source, KB)) == {"own_kernel_required"}
    result = scan(source, OFF)
    assert_clean(result)
    assert result.own_kernels.empty and result.language is None


# --- fallbacks -----------------------------------------------------------------------------------
@pytest.mark.parametrize("forward", [
    """
    try:
        y = torch.empty_like(x)
        _scale_kernel[(1,)](x, y, x.numel(), BLOCK=1024)
    except Exception:
        y = x * 2
    return y
    """,
    """
    try:
        return _scale(x)
    except Exception:
        return x.exp()
    """,
    """
    with contextlib.suppress(Exception):
        return _scale(x)
    return x
    """,
])
def test_try_except_around_launches_is_a_fallback(forward):
    result = scan(candidate(forward, "import contextlib"), KB)
    assert rules(result) == {"no_fallback"} and kinds(result) == {K.POLICY}


def test_probing_a_kernel_or_a_build_at_import_is_a_fallback():
    probe = '''
        try:
            _probe = torch.empty(4)
            _scale_kernel[(1,)](_probe, _probe, 4, BLOCK=4)
            USE_KERNEL = True
        except Exception:
            USE_KERNEL = False
    '''
    assert "no_fallback" in rules(scan(candidate("return _scale(x)", probe)))
    build = CUDA_CANDIDATE.replace("_ext = load_inline(", "try:\n    _ext = load_inline(").replace(
        "verbose=False)", "verbose=False)\nexcept Exception:\n    _ext = None")
    assert rules(scan(build)) == {"no_fallback"}


# --- streams, threads, processes -----------------------------------------------------------------
@pytest.mark.parametrize("forward, prelude", [
    ("s = torch.cuda.Stream()\nwith torch.cuda.stream(s):\n    return _scale(x)", ""),
    ("with Stream() as s:\n    return _scale(x)", "from torch.cuda import Stream"),
    ("return _scale(x)", '_make = getattr(getattr(torch, "cu" + "da"), "Str" + "eam")'),
    ("return _scale(x)", '_acc = getattr(torch, "cuda")\n_s = _acc.Stream'),
])
def test_side_streams(forward, prelude):
    result = scan(candidate(forward, prelude))
    assert kinds(result) == {K.SIDE_STREAM}, [v.detail for v in result.violations]


def test_reading_the_current_stream_is_allowed():
    forward = "s = torch.cuda.current_stream()\ns.synchronize()\nreturn _scale(x)"
    assert_clean(scan(candidate(forward)))


@pytest.mark.parametrize("prelude, kind", [
    ("import threading\n_t = threading.Thread(target=print)", K.DEFERRED_RESULT),
    ("from concurrent.futures import ThreadPoolExecutor", K.DEFERRED_RESULT),
    ("import asyncio", K.DEFERRED_RESULT),
    ("import subprocess", K.PROCESS_ESCAPE),
    ("import os\nos.system('nvidia-smi')", K.PROCESS_ESCAPE),
    ("import os\n_pid = os.fork", K.PROCESS_ESCAPE),
    ("import multiprocessing as mp", K.PROCESS_ESCAPE),
    ("import sys\n_bye = sys.exit", K.PROCESS_ESCAPE),
])
def test_threads_and_processes(prelude, kind):
    assert kinds(scan(candidate("return _scale(x)", prelude))) == {kind}


def test_exits_from_forward_are_process_escapes():
    assert kinds(scan(candidate("raise SystemExit(0)"))) == {K.PROCESS_ESCAPE}
    assert kinds(scan(candidate("import os\nos._exit(0)"))) == {K.PROCESS_ESCAPE}


# --- tensor subclasses ---------------------------------------------------------------------------
@pytest.mark.parametrize("prelude", [
    "class Lazy(torch.Tensor):\n    pass",
    "class Lazy:\n    @classmethod\n    def __torch_function__(cls, func, types, args=(), kwargs=None):\n"
    "        return func(*args)",
    "def _wrap(x):\n    return torch.Tensor._make_wrapper_subclass(object, x.shape)",
    "from torch.utils._python_dispatch import TorchDispatchMode",
    "from torch.overrides import TorchFunctionMode",
])
def test_tensor_subclasses_and_modes_are_deferred_results(prelude):
    assert kinds(scan(candidate("return _scale(x)", prelude))) == {K.DEFERRED_RESULT}


def test_type_hints_and_isinstance_on_torch_tensor_are_fine():
    forward = "assert isinstance(x, torch.Tensor)\ny: torch.Tensor = _scale(x)\nreturn y"
    assert_clean(scan(candidate(forward)))


# --- patching ------------------------------------------------------------------------------------
@pytest.mark.parametrize("prelude, kind, rule", [
    ("torch.allclose = lambda *a, **k: True", K.TIMER_TAMPER, "no_patching"),
    ("setattr(torch, 'allclose', lambda *a, **k: True)", K.TIMER_TAMPER, "no_patching"),
    ("torch.cuda.Event.elapsed_time = lambda self, other: 0.001", K.TIMER_TAMPER, "no_patching"),
    ("setattr(getattr(torch.cuda, 'Ev' + 'ent'), 'elapsed_time', None)", K.TIMER_TAMPER, "no_patching"),
    ("import time\ntime.perf_counter = lambda: 0.0", K.TIMER_TAMPER, "no_patching"),
    ("from torch.cuda import synchronize\nimport torch.cuda\ntorch.cuda.synchronize = print", K.TIMER_TAMPER,
     "no_patching"),
    ("import builtins\nbuiltins.len = lambda x: 0", K.POLICY, "no_patching"),
    ("__builtins__['len'] = lambda x: 0", K.POLICY, "no_patching"),
    ("F.softmax = lambda x, dim: x", K.POLICY, "no_patching"),
    ("torch.Tensor.__add__ = lambda a, b: a", K.POLICY, "no_patching"),
    ("import sys\nsys.modules['torch'] = None", K.PROCESS_ESCAPE, "no_patching"),
    ("torch.backends.cuda.matmul.allow_tf32 = True", K.POLICY, "no_global_settings"),
    ("torch.set_float32_matmul_precision('medium')", K.POLICY, "no_global_settings"),
])
def test_patching_torch_time_and_builtins(prelude, kind, rule):
    result = scan(candidate("return _scale(x)", prelude))
    assert kind in kinds(result) and rule in rules(result), [v.detail for v in result.violations]


def test_rebinding_own_names_is_not_patching():
    prelude = '''
        from time import perf_counter
        perf_counter = None
        _cfg = {}
        _cfg["block"] = 1024
    '''
    assert_clean(scan(candidate("self.calls = getattr(self, 'calls', 0) + 1\nreturn _scale(x)", prelude)))


# --- memory, frames, raw access, dynamic code ----------------------------------------------------
@pytest.mark.parametrize("prelude, kind", [
    ("import gc\n_objs = gc.get_objects()", K.REFERENCE_READ),
    ("import sys\n_f = sys._getframe(1)", K.PHASE_DETECTION),
    ("import inspect\n_f = inspect.currentframe()", K.PHASE_DETECTION),
    ("try:\n    raise ValueError\nexcept ValueError as e:\n    _f = e.__traceback__.tb_frame.f_back",
     K.PHASE_DETECTION),
    ("import ctypes", K.PROCESS_ESCAPE),
    ("import sys\n_mods = sys.modules", K.PROCESS_ESCAPE),
    ("exec('import os')", K.POLICY),
    ("_os = __import__('os')", K.POLICY),
    ("import importlib\n_sp = importlib.import_module('subprocess')", K.POLICY),
    ("_name = 'mat' + 'mul'.upper().lower()\n_mm = getattr(torch, _name)", K.POLICY),
    ("from os import *", K.POLICY),
])
def test_introspection_and_dynamic_code(prelude, kind):
    assert kind in kinds(scan(candidate("return _scale(x)", prelude)))


def test_harmless_neighbours_of_banned_modules():
    prelude = '''
        import gc
        import importlib
        import inspect
        import os
        import sys

        gc.collect()
        _tl = importlib.import_module("triton.language")
        _m = __import__("math")
        _sig = inspect.signature(print) if sys.version_info >= (3, 8) else None
        _here = os.path.join(os.path.dirname("a/b"), "c")
        _cpus = os.cpu_count()
        _f16 = getattr(torch, "float16")
        _has_triton = importlib.util.find_spec("triton") is not None
    '''
    assert_clean(scan(candidate("return _scale(getattr(self, 'x', x))", prelude)))


# --- files, environment, network -----------------------------------------------------------------
@pytest.mark.parametrize("forward, prelude, kind", [
    ("return torch.load(open('/tmp/expected.pt', 'rb'))", "", K.REFERENCE_READ),
    ("return torch.load('/tmp/expected.pt')", "", K.REFERENCE_READ),
    ("return _scale(x)", "import pathlib\n_data = pathlib.Path('/tmp/x').read_bytes()", K.REFERENCE_READ),
    ("return _scale(x)", "from pathlib import Path", K.REFERENCE_READ),
    ("return _scale(x)", "import os\n_seed = os.environ.get('SEED')", K.REFERENCE_READ),
    ("return _scale(x)", "import os\n_seed = os.getenv('SEED')", K.REFERENCE_READ),
    ("return _scale(x)", "import numpy as np\n_ref = np.load('/tmp/ref.npy')", K.REFERENCE_READ),
    ("return _scale(x)", "import shutil", K.REFERENCE_READ),
    ("return _scale(x)", "import pickle\n_r = pickle.load", K.REFERENCE_READ),
    ("return _scale(x)", "import socket", K.PROCESS_ESCAPE),
    ("return _scale(x)", "from urllib.request import urlopen", K.PROCESS_ESCAPE),
])
def test_file_environment_and_network_access(forward, prelude, kind):
    assert kind in kinds(scan(candidate(forward, prelude)))


@pytest.mark.parametrize("cpp, kind", [
    ('FILE* f = fopen("/tmp/expected.bin", "rb");', K.REFERENCE_READ),
    ('std::ifstream in("/tmp/expected.bin");', K.REFERENCE_READ),
    ('const char* seed = getenv("SEED");', K.REFERENCE_READ),
    ('int fd = open("/tmp/x", 0);', K.REFERENCE_READ),
    ('remove("triton/entry/kernel.json");', K.REFERENCE_READ),
    ('std::remove("triton/entry/kernel.json");', K.REFERENCE_READ),
    ('::rename("triton/a", "triton/b");', K.REFERENCE_READ),
    ('chmod("triton/entry", 0);', K.REFERENCE_READ),
    ("auto r = &::rename;", K.REFERENCE_READ),
    ("syscall(82, 0, 0);", K.PROCESS_ESCAPE),
    ('system("nvidia-smi");', K.PROCESS_ESCAPE),
    ("pid_t p = fork();", K.PROCESS_ESCAPE),
    ('void* h = dlopen("libcublas.so", 1);', K.PROCESS_ESCAPE),
    ("int s = socket(2, 1, 0);", K.PROCESS_ESCAPE),
    ("std::thread worker([]{});", K.DEFERRED_RESULT),
    ("cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);", K.SIDE_STREAM),
    ("auto s = at::cuda::getStreamFromPool();", K.SIDE_STREAM),
])
def test_cpp_sources_get_the_same_rules(cpp, kind):
    source = CUDA_CANDIDATE.replace(ALLOC_LINE, f"    {cpp}\n{ALLOC_LINE}")
    result = scan(source)
    assert kinds(result) == {kind}, [v.detail for v in result.violations]
    line = source.splitlines().index(f"    {cpp}") + 1
    assert result.violations[0].detail.startswith(f"cand.py:{line}: C++ ")


@pytest.mark.parametrize("cpp", [
    "CUmodule m; cuModuleLoadData(&m, a.data_ptr());",
    "CUfunction f; cuModuleGetFunction(&f, nullptr, \"k\");",
    "cudaLibrary_t lib; cudaLibraryLoadData(&lib, a.data_ptr(), nullptr, nullptr, 0, nullptr, nullptr, 0);",
    "nvrtcProgram prog; nvrtcCreateProgram(&prog, \"\", \"k.cu\", 0, nullptr, nullptr);",
    "auto load = &cuModuleLoadData;",
])
def test_gpu_code_loaded_at_run_time_from_cpp_is_not_own(cpp):
    """The trace names what the process loaded; only load_inline's build is read as the candidate's."""
    source = CUDA_CANDIDATE.replace(ALLOC_LINE, f"{ALLOC_LINE}\n    {cpp}")
    assert rules(scan(source)) == {"own_kernels_only"}, [v.detail for v in scan(source).violations]


@pytest.mark.parametrize("cpp", [
    "auto c = at::matmul(a, b);",
    "auto c = torch::mm(a, b);",
    "auto y = at::native::layer_norm(a, {4}, {}, {}, 1e-5);",
    "auto y = at::softmax(a, -1);",
    "auto s = a.sum();",
    "out.add_(b);",
    "cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, nullptr, nullptr, n, nullptr, n, nullptr, nullptr, n);",
])
def test_library_compute_in_cpp_breaks_strict_only(cpp):
    source = CUDA_CANDIDATE.replace(ALLOC_LINE, f"{ALLOC_LINE}\n    {cpp}")
    assert rules(scan(source)) == {"own_compute_only"}
    assert_clean(scan(source, KB))


def test_cpp_device_code_look_alikes_are_not_library_compute():
    cpp = ("auto z = at::zeros({4}, a.options()); auto w = a.contiguous().view({-1}).to(at::kFloat); "
           "auto o = torch::empty({4}, torch::dtype(torch::kFloat32).device(torch::kCUDA)); "
           "auto sz = at::elementSize(a.scalar_type()); auto d = at::device(at::kCUDA); "
           "float big = std::numeric_limits<float>::max(); bool any = tile.any(big > 0); int s = a.size(0); "
           "std::vector<int> v{1, 2}; v.erase(std::remove(v.begin(), v.end(), 1), v.end());")
    assert_clean(scan(CUDA_CANDIDATE.replace(ALLOC_LINE, f"{ALLOC_LINE}\n    {cpp}")))


def test_cpp_token_pasting_is_expanded_before_the_scan():
    harmless = CUDA_CANDIDATE.replace("template <typename T>", "#define NAME(T) scale_##T\ntemplate <typename T>")
    assert_clean(scan(harmless))
    hidden = harmless.replace(ALLOC_LINE, f"    cudaStream_t s; NAME2(cudaStream, Create)(&s);\n{ALLOC_LINE}")
    hidden = hidden.replace("#define NAME(T)", "#define NAME2(a, b) a ## b\n#define NAME(T)")
    assert kinds(scan(hidden, KB)) == {K.SIDE_STREAM}


def test_unreadable_cpp_sources_are_a_blind_spot():
    source = CUDA_CANDIDATE.replace("cuda_sources=cuda_kernels", "cuda_sources=_fetch_source()")
    fetch = "def _fetch_source():\n    return cuda_kernels\n\n\n"
    source = source.replace("_ext = load_inline(", fetch + "_ext = load_inline(")
    result = scan(source)
    assert "readable_cpp_source" in rules(result)


def test_inline_and_joined_cuda_sources_are_found():
    source = '''
        import torch
        from torch.utils import cpp_extension

        HEAD = "#include <cuda_runtime.h>"
        BODY = "__global__ void double_it(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] *= 2; }"
        mod = cpp_extension.load_inline("m", "void run(torch::Tensor x);", cuda_sources="\\n".join([HEAD, BODY]))

        class ModelNew(torch.nn.Module):
            def forward(self, x):
                mod.run(x)
                return x
    '''
    result = scan(source)
    assert_clean(result)
    assert result.own_kernels.cuda == {"double_it"}


# --- compilers, settings, probes, private torch ---------------------------------------------------
@pytest.mark.parametrize("prelude", [
    "@torch.compile\ndef _f(x):\n    return x",
    "_f = torch.compile(lambda x: x, dynamic=False)",
    "import torch._dynamo",
    "from torch._inductor import config",
    "_f = torch.jit.script(lambda x: x)",
])
def test_compilers_are_banned_except_under_off(prelude):
    assert rules(scan(candidate("return _scale(x)", prelude), KB)) == {"no_torch_compile"}
    assert_clean(scan(candidate("return _scale(x)", prelude), OFF))


def test_phase_probes():
    timed = candidate("t0 = time.perf_counter()\ny = _scale(x)\nself.dt = time.perf_counter() - t0\nreturn y",
                      "import time")
    assert kinds(scan(timed, KB)) == {K.PHASE_DETECTION}
    assert_clean(scan(candidate("return _scale(x)", "import time\n_T0 = time.perf_counter()"), KB))
    capture = candidate("if torch.cuda.is_current_stream_capturing():\n    return x\nreturn _scale(x)")
    assert kinds(scan(capture, KB)) == {K.PHASE_DETECTION}
    grad = candidate("return _scale(x) if torch.is_grad_enabled() else x")
    assert kinds(scan(grad, KB)) == {K.PHASE_DETECTION}


def test_private_torch_internals():
    assert rules(scan(candidate("torch._C._set_cublas_allow_tf32(True)\nreturn _scale(x)"), KB)) == {"no_private_torch"}
    assert_clean(scan(candidate("s = torch._C._cuda_getCurrentRawStream(0)\nreturn _scale(x)"), KB))


# --- library compute (strict only) ---------------------------------------------------------------
@pytest.mark.parametrize("forward", [
    "return F.relu(_scale(x))",
    "return torch.matmul(_scale(x), x)",
    "return _scale(x).sum(dim=-1)",
    "return _scale(x).exp()",
    "y = _scale(x)\ny.add_(1)\nreturn y",
    "return _scale(x) @ x",
    "return torch.ops.aten.mm.default(x, x)",
    "return torch.nn.functional.softmax(_scale(x), dim=-1)",
    "return torch.Tensor.mul(_scale(x), 2)",
    "y = torch.empty_like(x)\ny += _scale(x)\nreturn y",
    "return torch.where(x > 0, _scale(x), x)",
    "return _scale(torch.randn(4))",
])
def test_library_compute_in_forward_breaks_strict_only(forward):
    source = candidate(forward)
    assert rules(scan(source)) == {"own_compute_only"}, [v.detail for v in scan(source).violations]
    assert_clean(scan(source, KB))


@pytest.mark.parametrize("forward", [
    "return sum((_scale(a), b))",
    "return operator.iadd(_scale(a), b)",
    "return _scale(a).__add__(b)",
    "return getattr(_scale(a), 'add_')(b)",
    "return max(a, b)",
])
def test_tensor_arithmetic_without_a_torch_name(forward):
    source = HEADER + f"""
import operator


class ModelNew(nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        {forward}
"""
    assert rules(scan(source)) == {"own_compute_only"}


def test_library_compute_in_helpers_reached_from_forward():
    prelude = '''
        def _norm(x):
            return x / x.norm()


        class Helper:
            def prepare(self, x):
                return _norm(x)
    '''
    result = scan(candidate("return _scale(Helper().prepare(x))", prelude))
    assert rules(result) == {"own_compute_only"} and "_norm()" in result.violations[0].detail


def test_tensor_arithmetic_is_seen_only_on_known_tensors():
    typed = HEADER + '''
class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor, scale: float) -> torch.Tensor:
        return _scale(x) if scale > 0 else x * scale
'''
    assert rules(scan(typed)) == {"own_compute_only"}
    untyped = candidate("n = x.shape[0] * 2 + x.numel() // 4\n"
                        "if n > 3 and x is not None:\n    return _scale(x)\nreturn x")
    assert_clean(scan(untyped))


def test_compute_outside_forward_paths_is_not_checked():
    prelude = '''
        _TABLE = torch.linspace(0, 1, 16).exp()


        def _reference(x):  # kept for debugging, never called from forward
            return F.relu(x)
    '''
    assert_clean(scan(candidate("return _scale(x)", prelude, init="self.w = nn.Parameter(torch.randn(4).abs())")))


# --- odd code ------------------------------------------------------------------------------------
def test_syntax_errors_are_load_failures_not_violations():
    result = scan("def forward(self, x):\n    return (x\n")
    assert result.violations == [] and result.syntax_error.startswith("cand.py:")
    assert scan_candidate("x = 1\0", "cand.py", STRICT).syntax_error is not None
    deep = "x = " + "(" * 300 + "1" + ")" * 300
    assert scan_candidate(deep, "cand.py", STRICT).syntax_error is not None


def test_off_reports_kernels_and_nothing_else():
    source = candidate("import os\nos.system('x')\nreturn F.relu(x)", "import threading")
    result = scan(source, OFF)
    assert_clean(result)
    assert result.own_kernels.triton == {"_scale_kernel"}


def test_violation_details_name_file_line_and_rule():
    result = scan(candidate("return F.relu(_scale(x))"))
    (violation,) = result.violations
    line = candidate("return F.relu(_scale(x))").splitlines().index("        return F.relu(_scale(x))") + 1
    expected = "torch.nn.functional.relu in forward() is library compute [own_compute_only]"
    assert violation.detail == f"cand.py:{line}: {expected}"
    assert "\n" not in violation.detail


def test_every_rule_says_why():
    assert all(rule.why and rule.name == name for name, rule in RULES.items())


def test_the_scan_survives_the_standard_library():
    """Odd code of every kind: the scan must never raise, whatever the file holds."""
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))[::3]  # ~70 files, every kind of code
    assert files
    for path in files:
        scan_candidate(path.read_text(errors="replace"), path.name, STRICT)


# --- the adversarial corpus ----------------------------------------------------------------------
CORPUS = Path(__file__).resolve().parents[1] / "adversarial" / "candidates"
ACCEPTED = ["rmsnorm/single_block.py", "rmsnorm/autotuned.py", "rmsnorm/two_pass_blocked.py",
            "rmsnorm/optional_import.py", "rmsnorm/libdevice_rsqrt.py", "rmsnorm/views_and_reshape.py",
            "rmsnorm/persistent_rows.py", "vector_add/masked_add.py", "vector_add/bf16_native_add.py",
            "vector_add/cuda_add.py", "matmul/autotuned_native_dot.py", "matmul/tiled_fp32_accumulate.py",
            "sgd_momentum/fused_inplace.py"]
REJECTED = {"rmsnorm/background_thread.py": K.DEFERRED_RESULT, "rmsnorm/lazy_subclass.py": K.DEFERRED_RESULT,
            "rmsnorm/fallback_to_torch.py": K.POLICY, "rmsnorm/gc_scan_outputs.py": K.REFERENCE_READ,
            "rmsnorm/read_expected_file.py": K.REFERENCE_READ, "rmsnorm/read_seed_env.py": K.REFERENCE_READ,
            "rmsnorm/side_stream.py": K.SIDE_STREAM, "rmsnorm/torch_compile.py": K.POLICY,
            "rmsnorm/torch_rms_norm.py": K.POLICY, "rmsnorm/torch_temp_freed.py": K.POLICY,
            "rmsnorm/patch_allclose.py": K.TIMER_TAMPER, "rmsnorm/patch_perf_counter.py": K.TIMER_TAMPER,
            "rmsnorm/patch_event_timer.py": K.TIMER_TAMPER, "rmsnorm/stack_probe.py": K.PHASE_DETECTION,
            "rmsnorm/profiler_probe.py": K.PHASE_DETECTION, "rmsnorm/spawn_process.py": K.PROCESS_ESCAPE,
            "rmsnorm/system_exit.py": K.PROCESS_ESCAPE, "rmsnorm/exit_early.py": K.PROCESS_ESCAPE,
            "rmsnorm/patch_timer_per_call.py": K.TIMER_TAMPER, "rmsnorm/side_stream_obfuscated.py": K.SIDE_STREAM,
            "vector_add/cuda_side_stream.py": K.SIDE_STREAM, "vector_add/cuda_side_stream_macro.py": K.SIDE_STREAM,
            "vector_add/graph_capture_probe.py": K.PHASE_DETECTION, "vector_add/sum_builtin_add.py": K.POLICY,
            "matmul/cuda_at_matmul.py": K.POLICY, "matmul/torch_matmul.py": K.POLICY}


def _corpus(name: str) -> str:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(f"{name} is not in the adversarial corpus")
    return path.read_text()


@pytest.mark.parametrize("name", ACCEPTED)
def test_corpus_candidates_that_must_be_accepted(name):
    assert_clean(scan_candidate(_corpus(name), name, STRICT))


@pytest.mark.parametrize("name, kind", sorted(REJECTED.items()))
def test_corpus_exploits_caught_statically(name, kind):
    assert kind in kinds(scan_candidate(_corpus(name), name, STRICT))
