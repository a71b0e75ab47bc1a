"""The static scan's rules: each a ``Rule`` record with its rationale, and the name tables they use.

A finding's kind is its rule's, except where one rule covers targets of different kinds
(``no_patching`` on a timer is ``timer_tamper``, on ``sys.modules`` ``process_escape``). The C++
sources given to ``load_inline`` get a token scan with the same rules (``cpp_findings``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from kernellab.evaluate.verdict import ViolationKind
from kernellab.sandbox.own_compiles import blank_cpp_noise, global_names  # noqa: F401 (the C++ scan's, shared)
from kernellab.tasks.model import Policy

K = ViolationKind
_GATED = frozenset({Policy.STRICT, Policy.KERNELBENCH})


@dataclass(frozen=True)
class Rule:
    """A static rule: the violation kind it yields, what it says of a finding, and why it exists."""

    name: str
    kind: ViolationKind
    says: str  # appended to what was seen: "torch.cuda.Stream creates or selects a CUDA stream"
    why: str
    policies: frozenset[Policy] = _GATED


@dataclass(frozen=True)
class Finding:
    rule: str
    line: int  # 0: the file as a whole
    what: str
    kind: ViolationKind | None = None  # overrides the rule's kind


RULES: dict[str, Rule] = {r.name: r for r in (
    Rule("own_kernel_required", K.POLICY, "",
         "strict and kernelbench tasks time the candidate's own kernels; a file without a @triton.jit "
         "function or a CUDA __global__ function has none to time"),
    Rule("no_fallback", K.POLICY, "",
         "a try/except around a launch or around forward's calls is a second implementation: the "
         "checked path and the timed path can differ, and a kernel that never compiles still passes"),
    Rule("no_side_stream", K.SIDE_STREAM, "creates or selects a CUDA stream",
         "work on another stream escapes the events recorded on the launch stream, so the call looks "
         "faster than it is"),
    Rule("no_threads", K.DEFERRED_RESULT, "starts or manages threads",
         "a thread can finish the output after forward returned: a deferred result that the timer "
         "around the call never sees"),
    Rule("no_processes", K.PROCESS_ESCAPE, "starts, signals or leaves processes",
         "a child process, a signal handler or an early exit escapes the sandbox's accounting"),
    Rule("no_tensor_subclass", K.DEFERRED_RESULT, "makes a tensor subclass or a torch function/dispatch mode",
         "a subclass or mode can compute lazily when the result is first touched, after the timer "
         "stopped; outputs must be plain torch.Tensor"),
    Rule("no_patching", K.POLICY, "",
         "the harness runs in the candidate's interpreter: rebinding torch, triton, time or builtins "
         "attributes could change how the call is timed or checked"),
    Rule("no_memory_scan", K.REFERENCE_READ, "reads objects the candidate does not own",
         "the garbage collector reaches every object in the process: where a reference output or the "
         "seed would be if one ever leaked into the candidate's process"),
    Rule("no_frame_access", K.PHASE_DETECTION, "reads the call stack",
         "the caller's frames tell a timing loop from a correctness check (and hold the harness's "
         "locals); a candidate must not know who calls it"),
    Rule("no_raw_access", K.PROCESS_ESCAPE, "gives raw access to memory, the driver or loaded modules",
         "ctypes, cffi, CUDA driver bindings and sys.modules act outside what the scan and the "
         "sandbox can see"),
    Rule("no_dynamic_code", K.POLICY, "runs or imports code the scan cannot read",
         "exec, eval, dynamic imports and computed attribute names defeat every other static rule"),
    Rule("no_file_or_env", K.REFERENCE_READ, "reads or writes files or the environment",
         "a kernel needs neither; files and environment variables are where expected outputs or the "
         "seed could be found"),
    Rule("no_network", K.PROCESS_ESCAPE, "reaches the network",
         "results could be fetched from elsewhere, where nothing is measured"),
    Rule("no_torch_compile", K.POLICY, "has a compiler write the kernel",
         "torch.compile, Inductor and TorchScript write the kernel for the candidate; torch.compile "
         "is a baseline, not a candidate"),
    Rule("no_global_settings", K.POLICY, "changes a process-wide torch setting",
         "TF32, matmul precision, default dtype/device and memory limits are pinned by the harness "
         "for candidate and baselines alike"),
    Rule("no_phase_probe", K.PHASE_DETECTION, "can tell timed calls from checked ones",
         "clocks and events in forward, profiler and graph-capture queries anywhere let a candidate "
         "behave differently when it is timed"),
    Rule("no_private_torch", K.POLICY, "uses private torch internals",
         "torch._C and torch.ops internals bypass the dispatcher and can detect the harness"),
    Rule("own_compute_only", K.POLICY, "is library compute",
         "strict tasks require all compute in the candidate's own kernels; torch may only allocate, "
         "view, copy and cast", frozenset({Policy.STRICT})),
    Rule("device_code_only", K.POLICY, "is host code in a @triton.jit body",
         "a jit body compiles to device code, where only Triton's language, other jit functions and a few "
         "builtins on constants exist; a call into torch, NumPy or another host library there runs only "
         "under the interpreter, doing the kernel's work on the host"),
    Rule("own_kernels_only", K.POLICY, "compiles GPU code outside Triton and load_inline",
         "the trace recognises the candidate's kernels by what its Triton and load_inline compiles "
         "produced; kernels another compiler builds (CuPy, Numba, torch's jiterator) carry names the "
         "candidate chooses, and one named like torch's copy kernels would pass for data movement"),
    Rule("readable_cpp_source", K.POLICY, "hides code from the scan",
         "C++ given to load_inline is scanned like the Python; a source the scan cannot rebuild from "
         "string constants is a blind spot"),
)}


def _rule(name: str, *targets: str) -> dict[str, str]:
    return dict.fromkeys(targets, name)


# Qualified names (after alias resolution; bare builtins as builtins.X) and the rule each breaks.
# The longest matching prefix decides; None marks an allowed exception inside a banned namespace.
REFERENCES: dict[str, str | None] = {
    **_rule("no_side_stream", "torch.cuda.Stream", "torch.cuda.ExternalStream", "torch.cuda.stream",
            "torch.cuda.set_stream", "torch.cuda.StreamContext", "torch.cuda.streams", "torch.Stream"),
    **_rule("no_threads", "threading", "_thread", "concurrent.futures", "asyncio"),
    **_rule("no_processes", "multiprocessing", "torch.multiprocessing", "torch.distributed", "subprocess",
            "signal", "pty", "atexit", "resource", "sys.exit", "builtins.exit", "builtins.quit",
            "builtins.SystemExit", "builtins.KeyboardInterrupt", "builtins.GeneratorExit",
            *(f"os.{f}" for f in ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp", "kill",
                                  "killpg", "abort", "_exit", "register_at_fork", "execv", "execve", "execl",
                                  "execle", "execlp", "execlpe", "execvp", "execvpe", "spawnl", "spawnle",
                                  "spawnlp", "spawnlpe", "spawnv", "spawnve", "spawnvp", "spawnvpe"))),
    **_rule("no_tensor_subclass", "torch.Tensor._make_subclass", "torch.Tensor._make_wrapper_subclass",
            "torch.utils._python_dispatch", "torch.overrides", "torch._subclasses",
            "torch._C._DisableTorchDispatch", "torch._C._DisableTorchFunction",
            "torch._C._DisableTorchFunctionSubclass", "torch._C._disabled_torch_function_impl"),
    **_rule("no_memory_scan", "gc.get_objects", "gc.get_referrers", "gc.get_referents"),
    **_rule("no_frame_access", "sys._getframe", "sys._current_frames", "sys.settrace", "sys.setprofile",
            "sys.gettrace", "inspect.currentframe", "inspect.stack", "inspect.trace",
            "inspect.getouterframes", "inspect.getinnerframes", "inspect.getframeinfo", "traceback.walk_stack",
            "traceback.extract_stack", "traceback.format_stack", "traceback.print_stack"),
    **_rule("no_raw_access", "ctypes", "_ctypes", "cffi", "sys.modules", "cuda", "pycuda", "torch.cuda.cudart"),
    **_rule("no_dynamic_code", "builtins.exec", "builtins.eval", "builtins.compile", "builtins.__import__",
            "importlib", "marshal", "runpy", "pkgutil", "types.FunctionType", "types.CodeType", "sys.path"),
    **_rule("no_file_or_env", "builtins.open", "io.open", "io.FileIO", "codecs.open", "pathlib", "shutil",
            "tempfile", "glob", "fileinput", "mmap", "linecache", "pickle.load", "pickle.Unpickler", "dill",
            "joblib", "sqlite3", "zipfile", "tarfile", "h5py", "safetensors", "torch.load", "torch.save",
            "torch.from_file", "torch.UntypedStorage.from_file", "torch.utils.cpp_extension.load",
            *(f"numpy.{f}" for f in ("load", "save", "savez", "savez_compressed", "savetxt", "fromfile",
                                     "loadtxt", "genfromtxt", "memmap")),
            *(f"os.{f}" for f in ("open", "fdopen", "listdir", "scandir", "walk", "stat", "lstat", "remove",
                                  "unlink", "rename", "replace", "mkdir", "makedirs", "rmdir", "chdir",
                                  "readlink", "symlink", "link", "truncate", "access", "environ", "environb",
                                  "getenv", "getenvb", "putenv", "unsetenv")),
            *(f"os.path.{f}" for f in ("exists", "lexists", "isfile", "isdir", "islink", "getsize",
                                       "getmtime", "getatime", "getctime"))),
    **_rule("no_network", "socket", "socketserver", "ssl", "urllib", "urllib3", "requests", "http", "httpx",
            "aiohttp", "ftplib", "smtplib", "telnetlib", "xmlrpc", "websocket", "websockets", "paramiko",
            "torch.hub"),
    **_rule("no_torch_compile", "torch.compile", "torch._dynamo", "torch._inductor", "torch.jit.script",
            "torch.jit.trace", "torch.jit.trace_module", "torch.jit.freeze", "torch.jit.optimize_for_inference",
            "torch.export", "torch._export"),
    **_rule("no_global_settings", "torch.set_float32_matmul_precision", "torch.set_default_dtype",
            "torch.set_default_device", "torch.set_default_tensor_type", "torch.use_deterministic_algorithms",
            "torch.set_deterministic_debug_mode", "torch.set_flush_denormal", "torch.cuda.set_device",
            "torch.cuda.set_per_process_memory_fraction", "torch.cuda.memory.set_per_process_memory_fraction",
            "torch.cuda.set_sync_debug_mode", "torch.cuda.memory._set_allocator_settings"),
    **_rule("no_phase_probe", "torch.cuda.is_current_stream_capturing", "torch.cuda.graphs.is_current_stream_capturing",
            "torch.profiler", "torch.autograd.profiler", "torch.autograd._profiler_enabled", "torch.cuda.profiler",
            "torch.is_grad_enabled", "torch.is_inference_mode_enabled", "torch.is_autocast_enabled"),
    **_rule("no_private_torch", "torch._C", "torch._VF", "torch._ops"),
    **_rule("own_kernels_only", "cupy", "cupyx", "numba", "torch.cuda.jiterator", "pyopencl", "warp", "taichi"),
    "importlib.util.find_spec": None, "importlib.metadata": None,
    "torch._C._cuda_getCurrentRawStream": None,  # how Inductor-style launchers read the current stream
}
# Python spellings of tensor arithmetic that name no torch function: sum((a, b)), operator.iadd(t, b).
BUILTIN_ARITHMETIC = frozenset({"builtins.sum", "builtins.max", "builtins.min", "builtins.abs", "builtins.pow",
                                "builtins.round", "builtins.divmod"} | {f"operator.{f}" for f in (
    "add iadd sub isub mul imul truediv itruediv floordiv ifloordiv mod imod pow ipow matmul imatmul neg pos abs "
    "and_ iand or_ ior xor ixor lt le gt ge eq ne").split()})
# Checked on forward paths only: clocks and events are harmless in module set-up code.
FORWARD_PROBES: dict[str, str | None] = _rule("no_phase_probe", "time", "datetime", "torch.cuda.Event", "torch.Event")
IMPORTABLE = frozenset({"torch", "triton", "numpy", "math", "functools", "itertools", "typing", "collections",
                        "dataclasses", "operator"})  # modules importlib/__import__ may load
PROTECTED = frozenset({"torch", "triton", "time", "random", "numpy", "math", "builtins", "os", "sys", "gc",
                       "inspect", "importlib", "functools", "kernellab", "ctypes", "threading", "contextlib"})
TENSOR_TYPES = frozenset({"torch.Tensor", "torch._tensor.Tensor", "torch.nn.Parameter",
                          "torch.nn.parameter.Parameter", "torch.nn.Buffer"})
SUBCLASS_ATTRS = frozenset({"_make_subclass", "_make_wrapper_subclass", "__torch_function__", "__torch_dispatch__"})
# A function's code object: swapping or rebuilding it (``fn.__code__.replace(co_filename=...)``) runs
# code the scan never read, under a file name of the candidate's choosing.
CODE_ATTRS = frozenset({"__code__", "co_filename", "co_code"})
# What a @triton.jit body may call by qualified name: Triton's language and helpers, builtins on
# constants (range, min, max, len, int, ...) and math on constexprs. Anything else is host code.
DEVICE_CALL_ROOTS = frozenset({"triton", "builtins", "math"})
FRAME_ATTRS = frozenset({"f_back", "f_locals", "f_globals", "f_builtins", "tb_frame", "gi_frame", "cr_frame",
                         "ag_frame", "__traceback__"})  # frames reached without inspect or sys
# Patching these is threat 8 (timers, synchronize, allclose): how a call is timed or compared.
_TIMER_WORDS = frozenset({"Event", "synchronize", "elapsed_time", "record", "perf_counter", "perf_counter_ns",
                          "monotonic", "monotonic_ns", "time_ns", "process_time", "do_bench", "do_bench_cudagraph",
                          "allclose", "isclose", "equal", "assert_close", "testing", "__eq__", "eq"})
TENSOR_FACTORIES = frozenset("""
    empty empty_like empty_strided zeros zeros_like ones ones_like full full_like arange tensor as_tensor rand
    rand_like randn randn_like randint randint_like
""".split())  # results are tensors, so operators on them are tensor arithmetic
PLAIN_CONSTRUCTORS = frozenset(f"builtins.{n}" for n in ("set", "list", "dict", "str", "tuple", "sorted",
                                                         "frozenset", "range", "enumerate", "zip", "len", "int",
                                                         "float", "bool", "repr", "format"))
_NN_CONTAINERS = frozenset({"Parameter", "ParameterList", "ParameterDict", "ModuleList", "ModuleDict",
                            "Sequential", "Module", "Identity", "Buffer", "UninitializedParameter",
                            "UninitializedBuffer"})

# torch.X functions that allocate, view, copy, cast or only describe: never library compute.
_TORCH_ALLOWED = frozenset("""
    empty empty_like empty_strided zeros zeros_like ones ones_like full full_like arange tensor as_tensor
    asarray from_numpy as_strided cat concat concatenate stack split chunk tensor_split unbind narrow reshape
    flatten unflatten squeeze unsqueeze transpose swapaxes swapdims permute movedim moveaxis t select
    view_as_real view_as_complex broadcast_to broadcast_tensors broadcast_shapes clone detach is_tensor
    is_floating_point is_complex numel result_type promote_types can_cast get_default_dtype get_default_device finfo iinfo
    device manual_seed seed initial_seed get_rng_state set_rng_state no_grad enable_grad inference_mode
    set_grad_enabled typename get_device
""".split())
_F_ALLOWED = frozenset({"pad"})  # constant padding is a fill plus a copy
_TORCH_COMPUTE_NAMESPACES = frozenset({"linalg", "fft", "special", "sparse", "nested", "masked"})
_STOCK_OP_NAMESPACES = frozenset({"aten", "prims", "quantized", "torchvision", "_c10d_functional", "c10d",
                                  "mkldnn", "fbgemm", "_quantized"})
# Tensor methods that compute (in-place forms end in "_"); views, copies and casts are absent.
_TENSOR_COMPUTE = frozenset("""
    sum mean prod max min amax amin argmax argmin aminmax norm var std logsumexp cumsum cumprod cummax cummin
    exp exp2 expm1 log log2 log10 log1p sqrt rsqrt sin cos tan tanh sinh cosh asin acos atan atan2 sigmoid
    relu erf erfc erfinv abs neg negative reciprocal square pow float_power sign sgn floor ceil round trunc
    frac fmod remainder lerp add sub subtract mul multiply div divide true_divide floor_divide addcmul
    addcdiv addmm addmv addbmm baddbmm matmul mm bmm mv dot vdot outer ger inner clamp clip clamp_min
    clamp_max maximum minimum softmax log_softmax eq ne lt le gt ge logical_and logical_or logical_not
    logical_xor bitwise_and bitwise_or bitwise_xor bitwise_not where masked_fill masked_scatter masked_select
    index_select index_add index_copy index_fill index_put gather scatter scatter_add scatter_reduce take put
    topk sort argsort kthvalue median nanmedian mode nansum nanmean all any count_nonzero nonzero unique tril
    triu flip roll repeat_interleave diff cross kron nan_to_num isnan isinf isfinite histc bincount
    __add__ __radd__ __iadd__ __sub__ __rsub__ __isub__ __mul__ __rmul__ __imul__ __truediv__ __rtruediv__
    __itruediv__ __floordiv__ __mod__ __pow__ __rpow__ __ipow__ __matmul__ __rmatmul__ __imatmul__ __neg__
""".split())  # .cpu()/.tolist()/.item() are absent: reading sizes or offsets to plan launches is legitimate


def lookup(q: str, table: dict[str, str | None]) -> str | None:
    """The rule of the longest prefix of ``q`` (on dots) found in ``table``."""
    parts = q.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in table:
            return table[key]
    return None


def is_torch_compute(q: str) -> bool:
    """True for a torch function that computes (F.*, torch.matmul, torch.ops.aten.*, ...)."""
    parts = q.split(".")
    if parts[0] != "torch" or len(parts) < 2:
        return False
    head, rest = parts[1], parts[2:]
    if head == "nn":
        return len(rest) >= 2 and rest[0] == "functional" and rest[1] not in _F_ALLOWED
    if head in _TORCH_COMPUTE_NAMESPACES:
        return True
    if head == "ops":
        return bool(rest) and rest[0] in _STOCK_OP_NAMESPACES
    if head == "Tensor":
        return bool(rest) and tensor_method_is_compute(rest[0])
    return not rest and not head[:1].isupper() and head not in _TORCH_ALLOWED and head not in ("_C",)


def tensor_method_is_compute(name: str) -> bool:
    base = name[:-1] if name.endswith("_") and not name.endswith("__") else name
    return base in _TENSOR_COMPUTE


def plain_receiver_name(name: str) -> bool:
    """Receivers that are loggers, not tensors (``log.log(...)`` is not ``Tensor.log``)."""
    lowered = name.lower().lstrip("_")
    return lowered in ("log", "logging") or lowered.endswith("logger")


def nn_layer(q: str | None) -> str | None:
    """``torch.nn.Linear`` for a library layer constructor; None for containers and parameters."""
    if not q or not q.startswith("torch.nn.") or q.startswith("torch.nn.functional."):
        return None
    last = q.rsplit(".", 1)[-1]
    return q if last[:1].isupper() and last not in _NN_CONTAINERS else None


def patch_finding(q: str, line: int, verb: str) -> Finding:
    parts = q.split(".")
    kind = None
    rule = "no_patching"
    if parts[0] == "time" or _TIMER_WORDS & set(parts) or q.startswith(("triton.testing", "torch.utils.benchmark")):
        kind = K.TIMER_TAMPER
    elif q.startswith("sys.modules") or parts[0] in ("ctypes",):
        kind = K.PROCESS_ESCAPE
    elif parts[0] == "gc":
        kind = K.REFERENCE_READ
    elif parts[0] == "inspect":
        kind = K.PHASE_DETECTION
    elif q.startswith("torch.backends"):
        rule = "no_global_settings"
    return Finding(rule, line, f"{verb} {q}", kind)


# --- C++ ------------------------------------------------------------------------------------------
# ATen compute as C++ calls it: a denylist, because at:: and torch:: also hold option helpers
# (torch::dtype, at::device, ...) and utilities. As tensor methods, names that device code also uses
# (any, all, max, min, where, abs, ...) are left out: cooperative groups and std:: types have them.
_CPP_METHODS = ("matmul", "mm", "bmm", "addmm", "baddbmm", "mv", "einsum", "sum", "mean", "prod", "amax", "amin",
                "softmax", "log_softmax", "exp", "log", "sqrt", "rsqrt", "sigmoid", "relu", "tanh", "add", "sub",
                "mul", "div", "pow", "clamp", "norm", "var", "std", "cumsum", "topk", "argmax", "argmin", "gather",
                "scatter", "index_select", "masked_fill", "linear", "conv2d")
_CPP_FUNCTIONS = _CPP_METHODS + (
    "layer_norm", "rms_norm", "group_norm", "batch_norm", "gelu", "silu", "conv1d", "conv3d", "conv_transpose2d",
    "scaled_dot_product_attention", "_scaled_mm", "addmv", "dot", "where", "maximum", "minimum", "abs", "neg",
    "reciprocal", "square", "erf", "softplus", "logsumexp", "max", "min", "any", "all", "sort", "argsort",
    "embedding", "index_add", "index_put", "masked_select", "nonzero", "outer", "tensordot", "dropout",
    "cross_entropy", "nll_loss", "mse_loss", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "interpolate")
_CPP_RULES = (
    ("no_side_stream", re.compile(r"\b(?:cudaStreamCreate\w*|cuStreamCreate\w*|getStreamFromPool|"
                                  r"getStreamFromExternal|getDefaultCUDAStream|setCurrentCUDAStream|"
                                  r"cudaStreamPerThread)\b")),
    ("no_threads", re.compile(r"\bstd::(?:thread|jthread|async)\b|\bpthread_create\b")),
    ("no_processes", re.compile(r"\b(?:fork|vfork|popen|system|execvp?e?|execlp?e?|posix_spawnp?|kill|_exit|"
                                r"_Exit|exit|quick_exit|abort)\s*\(|\bcudaLaunchHostFunc\b|\bcudaStreamAddCallback\b")),
    ("no_raw_access", re.compile(r"\b(?:dlopen|dlsym|cudaGetDriverEntryPoint\w*|cuGetProcAddress\w*|syscall)\s*\(")),
    # GPU code loaded or compiled at run time: the trace would name a module the judge never read
    # (a library's cubin under an own kernel's name), only load_inline's build is the candidate's.
    # Named anywhere, not only called: a function pointer taken of one is the same call.
    ("own_kernels_only", re.compile(r"\b(?:cuModuleLoad\w*|cuModuleGetFunction|cuLibraryLoad\w*|cuLibraryGetKernel|"
                                    r"cudaLibraryLoad\w*|cudaLibraryGetKernel|cuLink(?:Create|AddData|AddFile|Complete)"
                                    r"\w*|nvrtc[A-Z]\w*|nvJitLink[A-Z]\w*)\b")),
    # Strict only: ATen/torch compute and vendor libraries called from C++ (allocation is allowed).
    ("own_compute_only", re.compile(r"\b(?:at|torch)::(?:native::|_ops::|nn::functional::)?(?:"
                                    + "|".join(_CPP_FUNCTIONS) + r")(?:_out|_)?\s*\(|"
                                    r"\b(?:cublas|cublasLt|cudnn|cusparse|cufft|cusolver)[A-Z]\w*\s*\(|"
                                    r"\.\s*(?:" + "|".join(_CPP_METHODS) + r")_?\s*\(")),
    ("no_file_or_env", re.compile(r"\b(?:fopen|freopen|open|openat|opendir|creat|mmap|getenv|secure_getenv|"
                                  r"setenv|putenv|unlink|unlinkat|readlink)\s*\(|\b(?:std::)?[io]?fstream\b|"
                                  r"\bstd::filesystem\b|\benviron\b|"
                                  # changing files in its own folder (a compile the judge must read): not
                                  # std::remove, the algorithm
                                  r"(?<!std::)\bremove\s*\(|\bstd::remove\s*\([^,()]*\)|"
                                  r"\b(?:rename|renameat2?|rmdir|chmod|fchmod|fchmodat|chown|truncate|ftruncate|utimes?|"
                                  r"utimensat|symlink|link|mkdir|mkdirat|mknod)\s*\)?\s*\(|&\s*(?:::)?(?:remove|rename|"
                                  r"chmod|truncate|unlink|mkdir)\b")),
    ("no_network", re.compile(r"\b(?:socket|connect|gethostbyname|getaddrinfo)\s*\(|\bcurl_\w+")),
)
_PASTING_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)\(([^)]*)\)[ \t]*(.*)$", re.MULTILINE)


def _pasted(code: str) -> Iterator[tuple[int, str]]:
    """Expansions of token-pasting macros (``#define P(a, b) a##b``) at each use, so that
    ``P(cudaStream, Create)`` is scanned as ``cudaStreamCreate``. One level deep; deeper tricks are
    left to the trace."""
    for name, params, body in _PASTING_MACRO.findall(code):
        if "##" not in body:
            continue
        names = [p.strip() for p in params.split(",")]
        for use in re.finditer(rf"\b{name}\s*\(([^()]*)\)", code):
            args = [a.strip() for a in use.group(1).split(",")]
            if len(args) == len(names):
                text = body
                for param, arg in zip(names, args):
                    text = re.sub(rf"\b{re.escape(param)}\b", arg, text)
                yield use.start(), re.sub(r"\s*##\s*", "", text) + "("


def cpp_findings(code: str) -> Iterator[tuple[str, int, str]]:
    """(rule, offset, token) for banned calls in C++ code outside comments and string literals."""
    code = blank_cpp_noise(code)
    for rule, pattern in _CPP_RULES:
        for m in pattern.finditer(code):
            yield rule, m.start(), m.group().rstrip("( \t")
        for offset, text in _pasted(code):
            for m in pattern.finditer(text):
                yield rule, offset, m.group().rstrip("( \t")
