"""The guard in real candidate children: every way into the harness ends the child with its violation,
and code that only looks like it (logging, namedtuple, inspect.signature...) runs untouched.

Children come from a real fork server (interpreter mode, as on a machine without a GPU) and are
driven through ``CandidateProcess`` like the judge drives them. Attacks are written the way the
static scan does not model (``vars()``, ``type.__setattr__``, ...): the guard, not the scan, must
stop them. A few mechanisms need a set-up the fork server does not give (a package of trusted files
the test may write to, a harness that checks after each call); those run the real guard in a child
forked from the test itself.
"""

from __future__ import annotations

import os
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from kernellab.sandbox.candidate import CandidateError, CandidateProcess, ChildFailure, ChildSpec
from kernellab.sandbox.guard import CALL_RETURNED, ESCAPE_STATUS, LINE_PREFIX, TAMPER_STATUS

MODEL = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    def forward(self, x):
        {forward}
        return x + 1
"""


def spawn(server, tmp_path: Path, name: str) -> CandidateProcess:
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    return CandidateProcess(server, ChildSpec("cpu", True, env, tmp_path / f"{name}.log"))


def candidate(tmp_path: Path, name: str, at_import: str = "", in_forward: str = "pass") -> str:
    source = textwrap.dedent(at_import) + MODEL.format(forward=in_forward)
    path = tmp_path / f"{name}.py"
    path.write_text(source)
    return str(path)


def evaluate(child: CandidateProcess, path: str) -> torch.Tensor:
    """import, instantiate, one call: what the judge does first."""
    child.request("import", 60, path=path)
    child.request("instantiate", 60, key="k", init_inputs=[], seed=0, state={}, dtype="float32", keep_dtype=[])
    x = torch.arange(4, dtype=torch.float32)
    out = child.request("run", 60, key="k", calls=[{"inputs": [x]}], poison_bytes=[], profile=False)
    return out["results"][0]["outputs"][0]


def ends_with(server, tmp_path, name, violation, words, at_import="", in_forward="pass") -> ChildFailure:
    child = spawn(server, tmp_path, name)
    try:
        with pytest.raises(ChildFailure) as failure:
            evaluate(child, candidate(tmp_path, name, at_import, in_forward))
    finally:
        child.close()
    assert failure.value.violation == violation, str(failure.value)
    assert words in str(failure.value), str(failure.value)
    return failure.value


# ------------------------------------------------------------------------------- reaching in

REACHES = {
    # name: (source at import, source in forward, violation, words in the one-line error)
    "import_kernellab": ("import kernellab.sandbox.clock\n", "pass", "process_escape", "imports kernellab"),
    "raw_thread": ("import _thread, time\n_thread.start_new_thread(time.sleep, (30,))\n", "pass",
                   "process_escape", "starts a thread"),
    # A library operator's kernel called below the dispatcher: neither the op log nor RecordFunction sees it.
    "redispatch": ("import torch\n",
                   "torch.ops.aten.add_.Tensor.redispatch(torch._C.DispatchKeySet(torch._C.DispatchKey.CPU), x, x)",
                   "process_escape", "redispatch"),
    # RecordFunction off: the CPU's record of every aten op below the op log would see nothing.
    "record_function_off": ("import torch\n", "vars(torch._C._autograd)['_enable_record_function'](False)",
                            "process_escape", "switches the profiler"),
    "profiler_collection": ("import torch\n", "vars(torch._C._autograd)['_toggle_collection_dynamic'](False, set())",
                            "process_escape", "switches the profiler"),
    "thread_in_forward": ("import threading\n", "threading.Thread(target=print).start()", "process_escape",
                          "starts a thread"),
    "import_in_forward": ("", "__import__('kernellab')", "process_escape", "imports kernellab"),
    "getframe": ("import sys\nf = vars(sys)['_getframe'](1)\n", "pass", "process_escape",
                 "takes a frame of the call stack (sys._getframe)"),
    "getframe_in_forward": ("import sys\n", "sys._getframe(2).f_locals", "process_escape", "sys._getframe"),
    "current_frames": ("import sys\nsys._current_frames()\n", "pass", "process_escape", "sys._current_frames"),
    "inspect_currentframe": ("import inspect\n", "inspect.currentframe().f_back", "process_escape",
                             "sys._getframe"),
    "inspect_stack": ("import inspect\n", "inspect.stack()", "process_escape", "sys._getframe"),
    "logging_currentframe": ("import logging\n", "logging.currentframe()", "process_escape", "sys._getframe"),
    "stack_description": ("import traceback\n", "traceback.extract_stack()", "process_escape", "sys._getframe"),
    "traceback_frame": ("", "e = None\n        try:\n            1 / 0\n        except ZeroDivisionError as exc:\n"
                            "            e = exc\n        getattr(e.__traceback__, 'tb_' 'frame')",
                        "process_escape", ".tb_frame"),
    "generator_frame": ("def gen():\n    yield 1\n", "getattr(gen(), 'gi_' 'frame')", "process_escape", ".gi_frame"),
    "coroutine_frame": ("async def co():\n    pass\n", "c = co()\n        c.cr_frame", "process_escape",
                        ".cr_frame"),
    "gc_get_objects": ("import gc\n", "vars(gc)['get_objects']()", "process_escape", "gc.get_objects"),
    "gc_get_referrers": ("import gc\n", "gc.get_referrers(x)", "process_escape", "gc.get_referrers"),
    "settrace": ("import sys\nsys.settrace(lambda *a: None)\n", "pass", "process_escape", "sys.settrace"),
    "setprofile_in_forward": ("import sys\n", "sys.setprofile(lambda *a: None)", "process_escape",
                              "sys.setprofile"),
    "signal_handler": ("import signal\nsignal.signal(signal.SIGALRM, lambda n, frame: frame.f_back)\n", "pass",
                       "process_escape", "installs a signal handler"),
    "fresh_signal_module": ("import sys\ndel sys.modules['_signal']\nimport _signal\n", "pass", "process_escape",
                            "imports _signal again"),
    "builtin_module_again": ("import _imp, importlib.machinery\n"
                             "_imp.create_builtin(importlib.machinery.ModuleSpec('_signal', None))\n", "pass",
                             "process_escape", "re-creates the builtin module '_signal'"),
    "audit_hook": ("import sys\nsys.addaudithook(lambda e, a: None)\n", "pass", "process_escape",
                   "adds an audit hook"),
    "ctypes": ("import sys\nctypes = sys.modules['ctypes']\nctypes.c_int.from_address(id(sys) + 8)\n", "pass",
               "process_escape", "ctypes"),
    "code_swap_of_a_timer": ("import torch\ndef fast(*a, **k): pass\n"
                             "vars(torch.cuda)['synchronize'].__code__ = fast.__code__\n", "pass",
                             "timer_tamper", "replaces __code__ of torch.cuda.synchronize"),
    "defaults_of_a_library_function": ("import json\njson.dumps.__defaults__ = ()\n", "pass", "process_escape",
                                       "replaces __defaults__ of json.dumps"),
    "forged_library_code": ("import ast, torch\n"
                            "code = compile(ast.parse('x = 1'), torch.__file__, 'exec')\nexec(code)\n", "pass",
                            "process_escape", "runs code under the name of"),
    "library_code_with_own_globals": ("import types, logging\n"
                                      "f = types.FunctionType(logging.getLogger.__code__, {})\n", "pass",
                                      "process_escape", "function.__new__"),
    "dispatch_mode_in_forward": ("from torch.utils._python_dispatch import TorchDispatchMode\n"
                                 "class Spy(TorchDispatchMode):\n"
                                 "    def __torch_dispatch__(self, func, types, args=(), kwargs=None):\n"
                                 "        return func(*args, **(kwargs or {}))\n",
                                 "Spy().__enter__()", "process_escape", "pushes a torch dispatch mode"),
    "torchscript_unit": ("import torch\nsrc = 'def f(x: int) -> int:\\n    return x\\n'\n",
                         "vars(torch.jit)['CompilationUnit']().define(src, {}.get)", "process_escape",
                         "compiles TorchScript"),
    "torchscript_shared_unit": ("import torch\nimport torch.jit._state\nsrc = 'def g(x: int) -> int:\\n    return x\\n'\n",
                                "torch.jit._state._python_cu.define(src, {}.get)", "process_escape",
                                "compiles TorchScript"),
    "tensor_class": ("import torch\nclass Sub(torch.Tensor):\n    pass\n", "x.__class__ = Sub", "process_escape",
                     "changes the class of a tensor"),
    "frame_callback": ("import torch\n", "vars(torch._C._dynamo.eval_frame)['set_eval_frame'](print)",
                       "process_escape", "installs a frame evaluation callback"),
    # The judge reads the candidate's compiles from its compile folders: bytes written through a
    # library's own writer (a forged metadata file in Triton's cache, a PTX to compile instead) are
    # not a compile.
    "triton_cache_put": ("import triton.runtime.cache as c\n"
                         "c.get_cache_manager('ab' * 32).put('{\"name\": \"add__kl_own\"}', 'add.json')\n", "pass",
                         "process_escape", "writes a file through"),
    "library_writer_in_forward": ("import torch.utils.cpp_extension as ext, os\n",
                                  "ext._maybe_write(os.path.expanduser('~/main.cpp'), 'int x;')", "process_escape",
                                  "writes a file through"),
    "pathlib_write": ("import pathlib\n", "pathlib.Path('/dev/null').write_text('x')", "process_escape",
                      "writes a file through"),
    "own_remove": ("import os\n", "getattr(os, 'un' 'link')(os.path.expanduser('~/triton/entry.json'))",
                   "process_escape", "writes a file (os.remove)"),
    "own_chmod": ("import os\n", "getattr(os, 'ch' 'mod')(os.path.expanduser('~'), 0o700)", "process_escape",
                  "writes a file (os.chmod)"),
    "library_copier": ("import shutil, os\n", "shutil.copyfile(__file__, os.path.expanduser('~/copy.py'))",
                       "process_escape", "writes a file through"),
    "logging_handler": ("import logging.handlers, os\n",
                        "logging.handlers.WatchedFileHandler(os.path.expanduser('~/handler.log'))",
                        "process_escape", "writes a file through"),
    "own_write": ("import builtins\n", "vars(builtins)['op' 'en']('/dev/null', 'w').close()", "process_escape",
                  "writes a file (open)"),
    # The op log's globals, reached through its torch-function mode, rebound for one host read (the
    # op log then hands the candidate's function a frame of the harness) and restored at once: the
    # op log taking a frame is a library taking one, and is checked there.
    "op_log_globals": ("import torch\nfrom torch.overrides import _get_current_function_mode_stack as stack\n"
                       "def grab():\n"
                       "    mode = [m for m in stack() if type(m).__name__ == '_HostReads'][0]\n"
                       "    g = type(mode).__torch_function__.__globals__\n"
                       "    original = g['_issuer']\n"
                       "    g['_issuer'] = lambda frame, through_torch: original(frame, through_torch)\n"
                       "    try:\n"
                       "        torch.zeros(1).tolist()\n"
                       "    finally:\n"
                       "        g['_issuer'] = original\n",
                       "grab()", "process_escape", "_issuer was rebound"),
}


@pytest.mark.parametrize("name", sorted(REACHES))
def test_reaching_into_the_harness_ends_the_child(server, tmp_path, name):
    at_import, in_forward, violation, words = REACHES[name]
    failure = ends_with(server, tmp_path, name, violation, words, at_import, in_forward)
    assert failure.reason == "died" and failure.exitcode in (ESCAPE_STATUS, TAMPER_STATUS)
    assert f"{name}.py:" in str(failure)  # where in the candidate's file


UNATTRIBUTED = {
    # name: (source at import, words in the one-line error). Refused whoever asks: no frame of the
    # candidate's is on the stack, so the error names no place in its file.
    # The collector runs between requests from the harness's frames: a finalizer of the candidate's
    # that starts a thread has none of its frames there. A relay thread started so put itself
    # between the harness and the judge and rewrote every answer.
    "finalizer_thread": ("import _thread, time, weakref\n"
                         "class Cycle:\n    pass\n"
                         "c = Cycle()\nc.me = c\n"
                         "weakref.finalize(c, _thread.start_new_thread, time.sleep, (30,))\n"
                         "del c\n"
                         "JUNK = [[] for _ in range(5000)]  # kept: the collector runs once the harness allocates\n",
                         "from a finalizer or callback"),
    # The collector runs the candidate's finalizers at the start of a request, as the candidate's
    # code: a chain of builtins (no frame of its own) that asks for the harness's frames there, to
    # read the answer being built from their locals, ends the child.
    "finalizer_frames": ("import collections, gc, sys, weakref\n"
                         "class Cycle:\n    pass\n"
                         "c = Cycle()\nc.me = c\n"
                         "weakref.finalize(c, collections.deque(maxlen=0).extend, map(sys._getframe, range(1, 30)))\n"
                         "del c\n"
                         "gc.set_threshold(1)\n",
                         "from a finalizer or callback"),
    "finalizer_object_graph": ("import collections, gc, weakref\n"
                               "class Cycle:\n    pass\n"
                               "c = Cycle()\nc.me = c\n"
                               "weakref.finalize(c, collections.deque(maxlen=0).extend, map(gc.get_objects, [None]))\n"
                               "del c\n"
                               "gc.set_threshold(1)\n",
                               "walks the object graph (gc.get_objects) from a finalizer"),
    # The harness's channel is a descriptor number: a socket of the candidate's ``dup2``-ed over it
    # would receive the judge's requests and the harness's answers, to pass on rewritten. The child
    # checks the descriptor still names the judge's socket before each read and each answer.
    "channel_dup2": ("import os, socket, stat\n"
                     "mine, other = socket.socketpair()\n"
                     "for name in os.listdir('/proc/self/fd'):\n"
                     "    fd = int(name)\n"
                     "    try:\n"
                     "        if stat.S_ISSOCK(os.fstat(fd).st_mode) and fd not in (mine.fileno(), other.fileno()):\n"
                     "            os.dup2(mine.fileno(), fd)\n"
                     "    except OSError:\n"
                     "        pass\n",
                     "re-pointed the harness's channel"),
}


@pytest.mark.parametrize("name", sorted(UNATTRIBUTED))
def test_what_no_frame_of_the_candidates_asks_for_still_ends_the_child(server, tmp_path, name):
    at_import, words = UNATTRIBUTED[name]
    failure = ends_with(server, tmp_path, name, "process_escape", words, at_import)
    assert failure.reason == "died" and failure.exitcode == ESCAPE_STATUS


REBINDINGS = {
    # found by the check after the request: nothing audits these writes
    "event_timer_class": ("import torch\n"
                          "type.__setattr__(torch.cuda.Event, 'elapsed_time', lambda self, end: 0.1)\n",
                          "timer_tamper", "class torch.cuda.streams.Event: elapsed_time was rebound"),
    "perf_counter": ("import time\nvars(time)['perf_counter'] = lambda: 0.0\n", "timer_tamper",
                     "module time: perf_counter was rebound"),
    "builtin": ("import builtins\nvars(builtins)['float'] = lambda x=0.0: 0.0\n", "process_escape",
                "module builtins: float was rebound"),
    "shadowing_a_builtin": ("import torch\nvars(torch.nn.modules.module)['isinstance'] = lambda a, b: True\n",
                            "process_escape", "module torch.nn.modules.module: isinstance was added"),
    "tensor_method": ("import torch\ntype.__setattr__(torch.Tensor, 'sum', lambda self, *a, **k: self)\n",
                      "process_escape", "class torch.Tensor: sum was added"),
    "import_hook": ("import sys\nclass Finder:\n    def find_spec(self, *a):\n        return None\n"
                    "vars(sys)['meta_path'].insert(0, Finder())\n", "process_escape", "sys.meta_path was changed"),
    # Another module object where a library's was: every import the harness runs later would find it.
    "module_object": ("import sys, types\nfake = types.ModuleType('torch.multiprocessing.reductions')\n"
                      "vars(sys)['modules']['torch.multiprocessing.reductions'] = fake\n", "process_escape",
                      "sys.modules['torch.multiprocessing.reductions'] was replaced"),
    # A kernel of the candidate's for an operator the harness itself calls (outputs are copied with
    # aten::clone, L2 is flushed with aten::zero_): its code would run in the harness's work.
    "aten_kernel": ("import torch\nlib = torch.library.Library('aten', 'IMPL')\n"
                    "lib.impl('clone', lambda x, **kw: x, 'CPU')\n", "process_escape",
                    "registers kernels for the library's own operators (torch.library)"),
    "aten_register_kernel": ("import torch\n"
                             "torch.library.register_kernel('aten::zero_', 'cpu')(lambda x: x)\n",
                             "process_escape", "registers kernels for the library's own operators (torch.library)"),
    "python_dispatcher": ("import torch\nfrom torch._C import DispatchKey\n"
                          "torch.ops.aten.clone.default.py_impl(DispatchKey.CPU)(lambda x, **kw: x)\n"
                          "_keep = torch._C._EnablePythonDispatcher()\n", "process_escape",
                          "the Python dispatcher was changed"),
    "module_object_cold": ("import sys, types\nsys.modules['json.decoder'] = types.ModuleType('json.decoder')\n",
                           "process_escape", "sys.modules['json.decoder'] was replaced"),
}


@pytest.mark.parametrize("name", sorted(REBINDINGS))
def test_rebinding_what_the_harness_runs_is_found_after_the_request(server, tmp_path, name):
    source, violation, words = REBINDINGS[name]
    ends_with(server, tmp_path, name, violation, words, at_import=source)


def test_a_rebound_closure_cell_is_found(server, tmp_path):
    source = """
        import torch, types
        fn = next(f for f in vars(torch).values() if type(f) is types.FunctionType and f.__closure__)
        fn.__closure__[0].cell_contents = None
    """
    ends_with(server, tmp_path, "cell", "process_escape", "(closure) was rebound", at_import=source)


# ------------------------------------------------------------------------------ out of reach


REPORT = """
import sys, types, gc
import triton.runtime.jit, triton.runtime.autotuner, triton.runtime.interpreter as interp

found = []
for name in list(sys.modules):
    if name.startswith("kernellab") and not name.startswith("kernellab_candidate"):
        module = sys.modules[name]
        stub = {"_rebuild_cpu"} if getattr(module, "__kernellab_stub__", False) else set()
        found += [f"{name}.{k}" for k in vars(module) if not k.startswith("__") and k not in stub]
        for k in stub:
            found += [f"{name}.{k} globals {g}" for g in vars(module)[k].__globals__
                      if g not in ("__builtins__", "__name__", "torch", "ProtocolError")]
if "kernellab" in repr(sys.modules["__main__"]):
    found.append("__main__ is the fork server")
found += [c.__qualname__ for c in object.__subclasses__() if str(c.__module__).startswith("kernellab.")]
found += [c.__qualname__ for c in type.__subclasses__(object) if c.__qualname__ in ("Harness", "Channel")]
wrappers = [triton.runtime.jit.JITFunction._do_compile, triton.runtime.autotuner.Autotuner._bench,
            interp.GridExecutor.__call__]
for fn in wrappers:
    found += [f"{fn.__qualname__} globals {k}" for k in fn.__globals__ if k not in ("__builtins__", "__name__")]
    for cell in fn.__closure__ or ():
        value = cell.cell_contents
        module = getattr(value, "__module__", None) or getattr(type(value), "__module__", "")
        methods = [v for v in vars(type(value)).values() if hasattr(v, "__globals__")]
        if str(module).startswith("kernellab") and methods:
            found.append(f"{fn.__qualname__} cell {type(value).__qualname__} has methods")
        for g in [getattr(value, "__globals__", {})]:
            found += [f"{fn.__qualname__} cell globals {k}" for k in g if k in ("Harness", "clock", "channel")]
raise LookupError("reachable: " + repr(found))
"""


def test_nothing_of_the_harness_is_reachable_without_an_audited_step(server, tmp_path):
    """sys.modules, __main__, type.__subclasses__ and the wrappers the harness installs in Triton
    (their __globals__ and __closure__, which Python does not audit) lead to nothing of it."""
    child = spawn(server, tmp_path, "report")
    path = tmp_path / "report.py"
    path.write_text(REPORT)
    with pytest.raises(CandidateError) as raised:
        child.request("import", 60, path=str(path))
    assert str(raised.value).startswith("LookupError: reachable: [] (at ")  # where its own code raised
    # the only kernellab module left is the wire format's stub, for pickle
    child.request("import", 60, path=candidate(tmp_path, "alive"))
    child.close()


CRAWL = """
import sys, types, torch, _imp, signal, _signal
import triton.runtime.jit, triton.runtime.autotuner, triton.runtime.interpreter as interp

# Everything the harness and the guard installed where the candidate can read it, crawled through
# what Python does not audit: globals, closure cells, defaults, function dicts, bound-method selves.
start = [signal.signal, _signal.signal, _imp.create_builtin, vars(type)["__subclasses__"],
         torch._C._push_on_torch_dispatch_stack, torch._C._push_on_torch_function_stack,
         torch._C._dynamo.eval_frame.set_eval_frame, triton.runtime.jit.JITFunction._do_compile,
         triton.runtime.autotuner.Autotuner._bench, interp.GridExecutor.__call__]
SANDBOX = {sandbox!r}
INSTALLED = ("gate", "create_builtin", "__subclasses__", "timed", "traced_call", "_bench_nothing", "logged_call",
             "counted_load", "counted_store", "ast_to_ttir", "load_inline")
seen, todo, found = set(), list(start), []
while todo:
    obj = todo.pop()
    if id(obj) in seen or isinstance(obj, (types.ModuleType, type, str, bytes, int, float)):
        continue
    seen.add(id(obj))
    if isinstance(obj, dict):
        if str(obj.get("__name__", "")).startswith("kernellab.") and "__file__" in obj:
            found.append("the globals of " + obj["__name__"])
        todo.extend(obj.values())
    elif isinstance(obj, (list, tuple, set, frozenset)):
        todo.extend(obj)
    elif isinstance(obj, types.FunctionType):
        if obj.__code__.co_filename.startswith(SANDBOX) and obj.__code__.co_name not in INSTALLED:
            found.append(obj.__qualname__)
        todo += [obj.__globals__, obj.__defaults__ or (), obj.__kwdefaults__ or {{}}, vars(obj)]
        todo += list(obj.__closure__ or ())
    elif isinstance(obj, types.CellType):
        try:
            todo.append(obj.cell_contents)
        except ValueError:  # an empty cell
            pass
    elif isinstance(obj, (types.MethodType, types.BuiltinMethodType)) and not isinstance(
            getattr(obj, "__self__", None), (types.GeneratorType, types.ModuleType)):
        todo.append(getattr(obj, "__self__", None))
raise LookupError("reachable: " + repr(sorted(set(found))))
"""


def test_the_guards_own_gates_lead_nowhere(server, tmp_path):
    """The gates and wrappers sit in library namespaces: crawling their globals, cells, defaults and
    dicts (none of it audited) reaches neither a harness module nor one of the guard's functions,
    whose cells hold its state (a candidate that found ``busy`` or the trust cache could switch the
    guard off). The guard's functions are held by suspended generators, whose frames are audited."""
    child = spawn(server, tmp_path, "crawl")
    path = tmp_path / "crawl.py"
    from kernellab.sandbox import guard

    path.write_text(CRAWL.format(sandbox=str(Path(guard.__file__).parent)))
    with pytest.raises(CandidateError) as raised:
        child.request("import", 60, path=str(path))
    assert str(raised.value).startswith("LookupError: reachable: [] (at ")  # where its own code raised
    child.close()


# ----------------------------------------------------------------------------- look-alikes


LOOK_ALIKES = """
import collections, dataclasses, enum, inspect, logging, traceback, typing, warnings
import torch

log = logging.getLogger(__name__)
log.warning("a candidate that logs at import")
warnings.warn("a candidate that warns at import")
Pair = collections.namedtuple("Pair", "a b")
class Point(typing.NamedTuple):
    x: int
    y: int
T = typing.TypeVar("T")
Color = enum.Enum("Color", "RED GREEN")
@dataclasses.dataclass(frozen=True)
class Settings:
    block: int = 128
SIGNATURE = inspect.signature(torch.nn.functional.softmax)
try:
    raise ValueError("its own exception")
except ValueError as exc:
    TEXT = str(exc)
    log.exception("a candidate that logs its own exception with its traceback")
"""

LOOK_ALIKE_FORWARD = """log.warning("a candidate that logs in forward")
        try:
            int("x")
        except ValueError:
            log.exception("and logs an exception")
        assert Pair(1, 2).a == 1 and Settings().block == 128 and Point(1, 2).y == 2
        inspect.signature(self.forward)
        inspect.getsource(type(self))"""


OWN_OPERATOR = """
import torch

@torch.library.custom_op("kl_candidate::plus_one", mutates_args=())
def plus_one(x: torch.Tensor) -> torch.Tensor:
    return x + 1

@plus_one.register_fake
def _(x):
    return torch.empty_like(x)
"""


def test_a_candidate_may_register_operators_of_its_own(server, tmp_path):
    """torch.library for the candidate's own namespace (custom_op, its fake kernel) is not refused."""
    child = spawn(server, tmp_path, "own_op")
    path = candidate(tmp_path, "own_op", OWN_OPERATOR, "x = torch.ops.kl_candidate.plus_one(x) - 1")
    assert torch.equal(evaluate(child, path), torch.arange(4, dtype=torch.float32) + 1)
    child.close()
    assert LINE_PREFIX not in (tmp_path / "own_op.log").read_text()


def test_code_that_only_looks_like_reaching_in_runs_untouched(server, tmp_path):
    """logging (which takes frames, and formats an exception's traceback), warnings, namedtuple/
    typing/enum (which read the caller's module through a frame), dataclasses (which exec code),
    inspect.signature: a library doing it for the candidate is not the candidate doing it."""
    child = spawn(server, tmp_path, "lookalike")
    path = candidate(tmp_path, "lookalike", LOOK_ALIKES, LOOK_ALIKE_FORWARD)
    for _ in range(2):
        assert torch.equal(evaluate(child, path), torch.arange(4, dtype=torch.float32) + 1)
    child.close()
    assert LINE_PREFIX not in (tmp_path / "lookalike.log").read_text()


REFUSED = {
    # a library not known to keep frames to itself, asked by the candidate: refused, not a violation
    "resolution_callback": ("import torch._jit_internal as jit\n",
                            "jit.createResolutionCallbackFromFrame(1)('self')"),
    "stack_summary_subclass": ("import traceback\n"
                               "class Summary(traceback.StackSummary):\n"
                               "    @classmethod\n"
                               "    def _extract_from_extended_frame_gen(cls, frames, **kwargs):\n"
                               "        return [f for f, _ in frames]\n",
                               "Summary.extract(traceback.walk_stack(None))"),
    # A builtin called back by a library allowed frames (namedtuple's ``str()`` of the type name) asks
    # with that library's frame on top, at an instruction that asks for no frame.
    "builtin_called_back_by_a_consumer": ("import collections, functools, sys\n"
                                          "KEEP = []\n"
                                          "class Name:\n"
                                          "    __str__ = functools.partial(KEEP.extend, map(sys._getframe, range(4)))\n",
                                          "collections.namedtuple(Name(), 'a b')"),
    "formatting_its_own_traceback": ("import traceback\n",
                                     "try:\n            int('x')\n        except ValueError:\n"
                                     "            traceback.format_exc()"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_library_that_could_hand_a_frame_back_is_refused_it(server, tmp_path, name):
    """Only libraries known to keep a frame to themselves may take one while the candidate runs;
    others get an exception (the candidate's call fails), and the child goes on."""
    at_import, in_forward = REFUSED[name]
    child = spawn(server, tmp_path, name)
    with pytest.raises(CandidateError, match="the sandbox refuses .* a frame of the call stack"):
        evaluate(child, candidate(tmp_path, name, at_import, in_forward))
    assert torch.equal(evaluate(child, candidate(tmp_path, "fine")), torch.arange(4, dtype=torch.float32) + 1)
    child.close()


def test_a_candidate_that_raises_is_not_a_breach(server, tmp_path):
    child = spawn(server, tmp_path, "raises")
    with pytest.raises(CandidateError, match="ZeroDivisionError"):
        evaluate(child, candidate(tmp_path, "raises", in_forward="1 / 0"))
    assert torch.equal(evaluate(child, candidate(tmp_path, "fine")), torch.arange(4, dtype=torch.float32) + 1)
    child.close()


# ------------------------------------------------------------------------------- the channel


FORGE = """
import os, pickle, stat, struct
for fd in range(3, 64):
    try:
        if stat.S_ISSOCK(os.fstat(fd).st_mode):
            payload = pickle.dumps({"ok": True, "value": {"seconds": 0.0}})
            os.write(fd, struct.pack("!Q", len(payload)) + payload)
    except OSError:
        pass
"""


def test_an_answer_written_to_the_channel_by_the_candidate_is_not_an_answer(server, tmp_path):
    """The channel's descriptor is in the candidate's process: a well-formed answer written to it
    lacks the request's token, and the judge takes it for what it is."""
    child = spawn(server, tmp_path, "forger")
    path = tmp_path / "forger.py"
    path.write_text(FORGE)
    with pytest.raises(ChildFailure) as failure:
        child.request("import", 60, path=str(path))
    assert failure.value.violation == "process_escape"
    assert "not the harness's answer" in str(failure.value)
    child.close()


# What any code in the child can do once it holds a request's token: it reads the request from the
# channel itself (a finalizer run between two requests, blocked on the socket until the next one), or
# from the process's memory. Here the token is given; the candidate answers with it and never returns,
# so its answer is the only one on the channel.
IMPERSONATE = """
import os, pickle, stat, struct, time
import torch

class ModelNew(torch.nn.Module):
    def forward(self, x):
        for fd in range(3, 64):
            try:
                if stat.S_ISSOCK(os.fstat(fd).st_mode):
                    payload = pickle.dumps({"ok": True, "token": "the-token", "value": "IMPERSONATED"})
                    os.write(fd, struct.pack("!Q", len(payload)) + payload + bytes(32))  # a tag of its own
            except OSError:
                pass
        time.sleep(30)
"""


def test_an_answer_written_with_the_requests_token_is_not_the_harnesss(server, tmp_path):
    """A token only shows a message answers the request in flight: the harness also signs its answers
    with a key the judge gave it (only in its hash object), and the judge refuses an unsigned one
    before decoding it, whoever in the child wrote it."""
    child = spawn(server, tmp_path, "impersonator")
    path = tmp_path / "impersonator.py"
    path.write_text(IMPERSONATE)
    child.request("import", 60, path=str(path))
    child.request("instantiate", 60, key="k", init_inputs=[], seed=0, state={}, dtype="float32", keep_dtype=[])
    started = time.perf_counter()
    child.token = "the-token"  # as if read from the channel or from memory
    child.channel.send({"op": "run", "token": "the-token", "key": "k", "calls": [{"inputs": [torch.ones(4)]}],
                        "poison_bytes": [], "profile": False})
    with pytest.raises(ChildFailure) as failure:
        child.collect("run", started, 60)
    assert failure.value.violation == "process_escape"
    assert "unsigned" in str(failure.value)
    child.close()


# ---------------------------------------------------- the guard in a child forked from the test


def in_armed_child(tmp_path: Path, prepare=None, candidate_source: str = "", after=None) -> tuple[int, str]:
    """Fork; in the child: ``prepare()``, arm the guard, run ``candidate_source`` as the candidate
    (code from a file outside every trusted directory), then ``after(guard)`` as the harness would.
    Returns the child's exit status and what it wrote to stderr."""
    from kernellab.sandbox import guard

    log = tmp_path / "armed.log"
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the forked child
        status = 0
        try:
            fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(fd, 2)
            if prepare is not None:
                prepare()
            handle = guard.arm()
            exec(compile(candidate_source, str(tmp_path / "candidate.py"), "exec"), {"__name__": "candidate"})
            if after is not None:
                after(handle)
        except BaseException as exc:  # noqa: BLE001 - reported through the status
            os.write(2, f"{type(exc).__name__}: {exc}\n".encode())
            status = 3
        os._exit(status)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), log.read_text()


def test_a_rebinding_undone_before_the_request_ends_is_caught_after_the_call(tmp_path):
    """The per-call check (``sys.audit(CALL_RETURNED)``, what the harness issues after a call of the
    candidate) sees a rebinding the candidate would undo before the request's own check."""
    source = "import torch\nvars(torch)['nan_to_num'] = lambda *a, **k: a[0]\n"

    def after_the_call(handle):
        sys.audit(CALL_RETURNED)

    status, log = in_armed_child(tmp_path, candidate_source=source, after=after_the_call)
    assert status == ESCAPE_STATUS, log
    assert "module torch: nan_to_num was rebound" in log


def test_a_library_file_written_after_arming_is_not_trusted(tmp_path):
    """A module planted in a trusted directory (here: a package loaded before arming) and imported
    runs as the candidate's code would: the guard refuses it."""
    package = tmp_path / "lib" / "trustedpkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")

    def load_package():
        sys.path.insert(0, str(tmp_path / "lib"))
        import trustedpkg  # noqa: F401 - its directory becomes a trusted one

    planted = package / "planted.py"
    planted.write_text("import sys\nsys._getframe(0)\n")
    later = time.time() + 3600  # as if written after the guard was armed (by whom: see the test below)
    os.utime(planted, (later, later))
    status, log = in_armed_child(tmp_path, prepare=load_package, candidate_source="import trustedpkg.planted\n")
    assert status == ESCAPE_STATUS, log
    assert "written after the sandbox started" in log and "planted.py" in log
    # The candidate cannot write it itself, in any spelling.
    for write in (f"open({str(planted)!r}, 'w').write('x')",
                  f"import pathlib\npathlib.Path({str(planted)!r}).write_text('x')"):
        status, log = in_armed_child(tmp_path, prepare=load_package, candidate_source=write + "\n")
        assert status == ESCAPE_STATUS and "writes a file" in log, log


COMPILING = """
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def double(x_ptr, n, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + i, tl.load(x_ptr + i, mask=i < n) * 2, mask=i < n)


sig = {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
triton.compile(ASTSource(double, sig, constexprs={"BLOCK": 128}), target=GPUTarget("cuda", 90, 32))
"""


def test_a_compile_the_candidate_starts_writes_its_cache(tmp_path):
    """Files a compiler writes for the candidate (Triton's cache, from inside ``compile``) are not the
    candidate writing: only a library's writer called by the candidate itself is."""
    cache = tmp_path / "cache"
    (tmp_path / "candidate.py").write_text(COMPILING)  # Triton reads a kernel's source from its file

    def compiled_not_interpreted():
        os.environ.update(TRITON_INTERPRET="0", TRITON_CACHE_DIR=str(cache))

    status, log = in_armed_child(tmp_path, prepare=compiled_not_interpreted, candidate_source=COMPILING)
    if status == 3 and "ptxas" in log:
        pytest.skip(f"Triton cannot compile for sm_90 here: {log.strip().splitlines()[-1]}")
    assert status == 0, log
    assert any(cache.glob("*/double.cubin")), sorted(p.name for p in cache.rglob("*"))


def test_the_guard_cannot_be_rebound_out_of_its_own_checks(tmp_path):
    """The guard's functions have private globals and builtins: rebinding the builtins it calls, or
    its module's names, changes nothing it does."""
    # ``id`` made to say that every frame is an introspection helper's (which the guard looks
    # through): a guard that looked its builtins up in the builtins module would find no one asking.
    source = ("import builtins, sys, traceback\n"
              "helper = id(traceback.walk_stack.__code__)\n"
              "vars(builtins)['id'] = lambda obj: helper\n"
              "sys._getframe(0)\n")
    status, log = in_armed_child(tmp_path, candidate_source=source)
    assert status == ESCAPE_STATUS, log
    assert "takes a frame of the call stack (sys._getframe)" in log


def test_state_libraries_keep_in_classes_is_not_a_rebinding(tmp_path):
    """Libraries keep state in class attributes (torch's profiler step counter, torch.cuda.graph's
    default capture stream, Triton's driver singletons): data changes are not tampering; adding code
    to a library class is."""
    def library_then_check(handle):
        from torch.autograd.profiler import KinetoStepTracker

        KinetoStepTracker.init_step_count("guard-test")
        KinetoStepTracker.increment_step("guard-test")  # rebinds the class's _current_step
        handle.check()

    status, log = in_armed_child(tmp_path, after=library_then_check)
    assert status == 0, log
    status, log = in_armed_child(tmp_path, candidate_source="import torch\ntype.__setattr__(torch.nn.Module, "
                                 "'__getattr__', lambda self, name: None)\n", after=lambda handle: handle.check())
    assert status == ESCAPE_STATUS, log
    assert "class torch.nn.modules.module.Module: __getattr__ was rebound" in log
