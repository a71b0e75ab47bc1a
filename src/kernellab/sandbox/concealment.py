"""Taking the harness out of the candidate's reach inside the process they share (see ``guard``).

Python offers unaudited ways from any object to others: a function's ``__globals__`` and
``__closure__``, a class's ``__subclasses__()``, ``sys.modules``. Each is closed here at its source,
once, before the candidate is imported:

- ``sealed(factory)`` builds the guard's own functions with private globals and a private copy of the
  builtins, so that rebinding a module attribute or a builtin changes nothing they do;
- ``detached(fn, **names)`` is how the harness builds the wrappers it installs into libraries
  (Triton's compile steps, the interpreter's launcher): their globals hold only the names given, not
  a harness module, so ``triton.runtime.jit.JITFunction._do_compile.__globals__`` leads nowhere;
- ``hide_harness`` drops every ``kernellab`` module from ``sys.modules`` (the wire format's rebuild
  function stays importable, rebuilt detached), replaces ``__main__`` (the fork server's module),
  and filters the harness's classes out of ``type.__subclasses__``, the one way to enumerate classes
  that no audit event covers. The original method is kept where only a generator's frame holds it:
  reading that frame is audited;
- ``install_gates`` replaces the C entry points that hand out frames or the harness's own
  operations without any audit event: ``signal.signal`` (a handler receives the interrupted frame),
  Dynamo's frame-evaluation hook, the tensor mode stacks (a mode left pushed sees the harness's
  fingerprint arithmetic) and re-creating a builtin module (a fresh ``_signal`` would bring a fresh
  ``signal``). Every name bound to such an entry point in a loaded namespace is replaced.

Nothing here is called after the candidate's code has started: each step relies on running first.
"""

from __future__ import annotations

import builtins
import ctypes
import gc
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

_HARNESS = "kernellab"


def is_harness_module(name: str) -> bool:
    return name == _HARNESS or name.startswith(_HARNESS + ".")


def private_builtins() -> dict[str, Any]:
    """A copy of the builtins as they are now (C functions: rebinding ``builtins.len`` later leaves it)."""
    return dict(builtins.__dict__)


def sealed(factory: Callable[..., Any]) -> Callable[..., Any]:
    """``factory`` rebuilt with private globals: it and every function it defines look names up there.

    The factory must reach everything through its arguments and the builtins; its module's globals
    (which the candidate may reach and rebind) are not consulted."""
    glb = {"__builtins__": private_builtins(), "__name__": "kernellab.guard.sealed"}
    return types.FunctionType(factory.__code__, glb, factory.__name__, factory.__defaults__, factory.__closure__)


def _names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _names(const)


def detached(fn: Callable[..., Any], **names: Any) -> Callable[..., Any]:
    """``fn`` rebuilt with globals holding only ``names`` (and the builtins it uses, as they are now).

    For wrappers the harness installs into libraries: the candidate reaches those through the library
    (``JITFunction._do_compile.__globals__``), and their globals must not be a harness module.
    Every global the code uses must be given or be a builtin; a missing one raises here, at install."""
    glb: dict[str, Any] = {"__builtins__": {}, "__name__": fn.__module__}
    for name in set(_names(fn.__code__)):
        if name in names:
            glb[name] = names[name]
        elif name in builtins.__dict__:
            glb["__builtins__"][name] = builtins.__dict__[name]
        elif name in fn.__globals__:
            raise NameError(f"detached({fn.__qualname__}): global {name!r} must be passed explicitly")
    rebuilt = types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, fn.__closure__)
    rebuilt.__qualname__, rebuilt.__doc__ = fn.__qualname__, fn.__doc__
    rebuilt.__kwdefaults__ = fn.__kwdefaults__
    return rebuilt


# ------------------------------------------------------------------------------------------ hiding


def hide_harness(hidden_classes: set[type]) -> Callable[[], None]:
    """Take the harness out of ``sys.modules``, ``__main__`` and ``type.__subclasses__``.

    Returns ``redrop``: the verifier calls it after every request, since the harness itself may
    import one of its modules lazily (a fresh copy, holding none of the running harness's state)."""
    _stub_wire_format()
    for name in [n for n in sys.modules if is_harness_module(n) and not _is_stub(sys.modules[n])]:
        del sys.modules[name]
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if main is not None and is_harness_module(getattr(spec, "name", None) or ""):
        sys.modules["__main__"] = types.ModuleType("__main__")  # the fork server's module
    _filter_subclasses(hidden_classes)
    return sealed(_redropper)(sys.modules)


def _redropper(modules):
    """Only names new since the last call are looked at (a set difference, in C: the scan of every
    name per request was ~1 ms of each child request on a GPU host with ~2,000 modules loaded), and
    the stubs' names, the harness names that stay, every time."""
    seen, stubs = set(), []

    def redrop():
        fresh = [n for n in modules.keys() - seen if n == "kernellab" or n.startswith("kernellab.")]
        kept = []
        for name in fresh + [n for n in stubs if n in modules]:
            if getattr(modules[name], "__kernellab_stub__", False) is True:
                kept.append(name)
            else:
                del modules[name]
        stubs[:] = kept
        seen.clear()
        seen.update(modules.keys())

    return redrop


def _is_stub(module: Any) -> bool:
    return getattr(module, "__kernellab_stub__", False) is True


def _stub_wire_format() -> None:
    """Keep the wire format's rebuild functions importable, and nothing else of their modules.

    The judge's pickles name ``kernellab.sandbox.channel._rebuild_cpu`` (CPU tensors), and pickle
    finds a global through ``sys.modules`` both ways. The module is replaced by a stub holding a
    detached copy of that one function, which the channel module then uses too (pickle checks that
    the function it saves is the one the module holds)."""
    channel = sys.modules.get("kernellab.sandbox.channel")
    if channel is None or _is_stub(channel):
        return
    import torch

    rebuild = detached(channel._rebuild_cpu, torch=torch, ProtocolError=channel.ProtocolError)
    stub = types.ModuleType(channel.__name__, "The wire format's rebuild function, alone.")
    stub._rebuild_cpu = rebuild
    stub.__kernellab_stub__ = True
    channel._rebuild_cpu = rebuild
    sys.modules[channel.__name__] = stub


def _real_dict(cls: type) -> dict[str, Any]:
    """The dict behind ``cls.__dict__`` (a read-only proxy)."""
    return gc.get_referents(cls.__dict__)[0]


def _filter_subclasses(hidden: set[type]) -> None:
    """``type.__subclasses__`` without the harness's classes.

    ``object.__subclasses__()`` lists every class in the process, harness classes included, and from
    a class its functions' ``__globals__`` lead to the harness's modules; no audit event covers it.
    The method of ``type`` is replaced in type's own dict (``type.__subclasses__ = ...`` is refused
    for a builtin type, so it can only be done from below), and the original is kept inside a
    suspended generator: its frame is the only reference, and reading a generator's frame is audited.
    Classes created later in harness modules are hidden by their module's name."""
    real = _real_dict(type)
    if getattr(real.get("__subclasses__"), "__kernellab_filter__", False):
        return
    send = sealed(_subclasses_filter)(real["__subclasses__"], frozenset(hidden), "kernellab.")

    def __subclasses__(cls, _send=send):
        """Return a list of immediate subclasses."""
        ok, value = _send(cls)
        if ok:
            return value
        raise value

    method = types.FunctionType(__subclasses__.__code__, {"__builtins__": {}}, "__subclasses__", (send,))
    method.__qualname__ = "type.__subclasses__"
    method.__kernellab_filter__ = True
    real["__subclasses__"] = method
    ctypes.pythonapi.PyType_Modified(ctypes.py_object(type))
    # Never freed: ``type``'s dict outlives the modules at interpreter shutdown, and on Python 3.12
    # freeing a function (and the generator behind it) from there crashed the process at exit.
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(method))


def _subclasses_filter(original, hidden, prefix):
    def run():
        result = None
        while True:
            cls = yield result
            try:
                result = (True, [c for c in original(cls) if c not in hidden
                                 and not (type(c.__module__) is str and c.__module__.startswith(prefix))])
            except BaseException as exc:  # noqa: BLE001 - handed back to the caller, as the original would raise it
                result = (False, exc)

    gen = run()
    next(gen)
    return gen.send


def harness_classes() -> set[type]:
    """Every class defined in a harness module now loaded (and the classes nested in those)."""
    found: set[type] = set()
    todo = [v for name, m in list(sys.modules.items()) if is_harness_module(name) and m is not None
            for v in list(vars(m).values()) if issubclass(type(v), type)]
    while todo:
        cls = todo.pop()
        if cls in found or not is_harness_module(getattr(cls, "__module__", "") or ""):
            continue
        found.add(cls)
        todo.extend(v for v in vars(cls).values() if issubclass(type(v), type))
    return found


# ------------------------------------------------------------------------------------------- gates


def gated_entry_points() -> dict[str, Any]:
    """The unaudited C entry points that hand out frames or the harness's own operations, by label.
    Absent ones (other versions) are left out."""
    import _imp
    import _signal
    import _thread

    import torch

    found = {"signal.signal": _signal.signal, "_imp.create_builtin": _imp.create_builtin}
    # Threads: ``threading.active_count`` (what a reply reports) does not see a ``_thread`` thread,
    # and one started by the candidate runs its code beside the harness's loading and copying.
    for name in ("start_new_thread", "start_new", "start_joinable_thread"):
        found[f"_thread.{name}"] = getattr(_thread, name, None)
    try:
        from torch._C._dynamo import eval_frame
    except ImportError:
        eval_frame = None
    for name in ("set_eval_frame", "set_bytecode_debugger_callback"):
        found[f"torch._C._dynamo.eval_frame.{name}"] = getattr(eval_frame, name, None)
    for name in ("_push_on_torch_dispatch_stack", "_push_on_torch_function_stack", "_dispatch_library"):
        found[f"torch._C.{name}"] = getattr(torch._C, name, None)
    # TorchScript: a scripted graph's ``fork`` runs on torch's inter-op pool, a native thread no count
    # sees, and can call back into Python there (an ignored function); its fusers write kernels.
    for name in _TORCHSCRIPT:
        found[f"torch._C.{name}"] = getattr(torch._C, name, None)
    cu = getattr(torch._C, "CompilationUnit", None)
    found["torch._C.CompilationUnit.define"] = getattr(cu, "define", None)
    # An operator handle's ``redispatch_boxed`` (``OpOverload.redispatch``) calls a kernel below the
    # Python key without a ``RecordFunction``: neither the CPU's op log nor the record below it sees it.
    handle = getattr(torch._C, "_DispatchOperatorHandle", None)
    found["torch._C._DispatchOperatorHandle.redispatch_boxed"] = getattr(handle, "redispatch_boxed", None)
    # The profiler's switches: the harness's trace of a call is its evidence (on the CPU, the record
    # of every aten op below the op log), and collection paused around a library kernel
    # (``toggle_collection_dynamic``) or ``RecordFunction`` turned off would leave it out.
    autograd = getattr(torch._C, "_autograd", None)
    for name in ("_toggle_collection_dynamic", "_enable_profiler", "_disable_profiler", "_prepare_profiler",
                 "_enable_profiler_legacy", "_disable_profiler_legacy", "_enable_record_function"):
        found[f"torch._C._autograd.{name}"] = getattr(autograd, name, None)
    return {label: fn for label, fn in found.items() if fn is not None}


_TORCHSCRIPT = ("_jit_script_compile", "_jit_script_class_compile", "_jit_script_compile_overload",
                "_jit_script_interface_compile", "_create_function_from_trace", "_create_function_from_trace_with_dict",
                "_create_method_from_trace", "import_ir_module", "import_ir_module_from_buffer",
                "_import_ir_module_from_package")


def _namespaces() -> frozenset[str]:
    """The operator namespaces registered now (``aten``, ``prims``, ...): the library's own."""
    import torch

    names = getattr(torch._C, "_dispatch_get_all_op_names", None)
    return frozenset(n.split("::")[0] for n in names()) if names is not None else frozenset({"aten", "prims"})


def gate_sites(originals: dict[str, Any], skip: set[str] | frozenset[str] = frozenset()
               ) -> dict[str, list[tuple[dict[str, Any], str]]]:
    """Where loaded modules (but those in ``skip``) bind each entry point, or a function wrapping it
    (``signal.signal`` wraps ``_signal.signal``: its ``__wrapped__`` would lead back). The fork
    server finds them once (a pass over every module, ~50 ms); a child looks only at modules loaded
    since."""
    by_id = {id(fn): label for label, fn in originals.items()}
    sites: dict[str, list[tuple[dict[str, Any], str]]] = {label: [] for label in originals}
    function = types.FunctionType
    for name, module in list(sys.modules.items()):
        d = getattr(module, "__dict__", None)
        if name in skip or type(d) is not dict:
            continue
        for key, value in list(d.items()):
            label = by_id.get(id(value))
            if label is None and type(value) is function:
                label = by_id.get(id(value.__dict__.get("__wrapped__")))
            if label is not None:
                sites[label].append((d, key))
    return sites


# What a thread start is refused as: after the guard is armed nothing starts a Python thread in the
# child, whoever is on the stack (a finalizer or callback of the candidate's runs with none of its
# frames there, from the harness's own).
THREAD_START = "starts a thread (it would run beside the harness's work)"


def install_gates(refuse: Callable[[str], None], originals: dict[str, Any],
                  sites: dict[str, list[tuple[dict[str, Any], str]]], trusted: frozenset = frozenset()) -> list[str]:
    """Bind a gate at every site of every entry point. ``refuse(what)`` decides (the guard: the
    candidate on the stack ends the process; anyone else gets a RuntimeError). Returns the labels
    gated."""
    what = {"signal.signal": "installs a signal handler (it would receive the harness's frame)",
            "torch._C._dynamo.eval_frame.set_eval_frame": "installs a frame evaluation callback",
            "torch._C._dynamo.eval_frame.set_bytecode_debugger_callback": "installs a bytecode debugger callback",
            "torch._C._push_on_torch_dispatch_stack": "pushes a torch dispatch mode",
            "torch._C._push_on_torch_function_stack": "pushes a torch function mode",
            "_thread": THREAD_START,
            "profiler": "switches the profiler (the harness's evidence of what ran)",
            "torch._C._dispatch_library": "registers kernels for the library's own operators (torch.library)",
            "torch._C._DispatchOperatorHandle.redispatch_boxed": "calls a library operator's kernel below the "
                                                                 "dispatcher (redispatch), where no record sees it",
            "torchscript": "compiles TorchScript (its forks run on torch's own threads)"}
    # The gates sit in library namespaces, where the candidate reads their closures: they reach the
    # guard's ``refuse`` only through a generator's frame (audited to read), never a cell holding it.
    refuse = sealed(_through_generator)(refuse)
    gated = []
    for label, original in originals.items():
        if label == "signal.signal":
            gate = sealed(_refusing)(refuse, what[label])
        elif label.startswith("torch._C._dynamo."):
            gate = sealed(_no_callback)(refuse, what[label])
        elif label.startswith("torch._C._push"):
            gate = sealed(_guarded_call)(original, refuse, what[label], trusted)
        elif label.startswith("torch._C._autograd."):
            gate = sealed(_guarded_call)(original, refuse, what["profiler"])
        elif label.startswith("_thread."):
            gate = sealed(_guarded_call)(original, refuse, what["_thread"])
        elif label == "torch._C._dispatch_library":
            gate = sealed(_guarded_call)(original, refuse, what[label], frozenset(), sealed(_library_of)(_namespaces()))
        elif label == "torch._C._DispatchOperatorHandle.redispatch_boxed":
            gate = sealed(_guarded_call)(original, refuse, what[label], frozenset(),
                                         sealed(_operator_of)(_namespaces()))
        elif label == "torch._C.CompilationUnit.define" or label.removeprefix("torch._C.") in _TORCHSCRIPT:
            gate = sealed(_refusing)(refuse, what["torchscript"])
        else:  # _imp.create_builtin
            gate = sealed(_fresh_builtins_only)(original, refuse, frozenset(sys.modules))
        gate.__name__ = getattr(original, "__name__", gate.__name__)
        if label in _METHODS:  # a method: the class holds it, and every instance reaches it there
            owner, name = _METHODS[label]()
            setattr(owner, name, gate)  # its metaclass (pybind11's) refuses type.__setattr__
            gated.append(label)
            continue
        for d, key in sites.get(label, ()):
            if d.get(key) is original or type(d.get(key)) is types.FunctionType:
                d[key] = gate
                gated.append(label)
    return sorted(set(gated))


def _through_generator(fn):
    """``fn`` callable with one argument through a suspended generator: whoever holds the result
    can call ``fn`` but not reach it (or what its closure holds)."""
    def run():
        result = None
        while True:
            arg = yield result
            result = fn(arg)

    gen = run()
    next(gen)
    return gen.send


def _refusing(refuse, what):
    def gate(*args, **kwargs):
        refuse(what)
        raise RuntimeError(f"the sandbox refuses this: it {what}")

    return gate


def _no_callback(refuse, what):
    """Dynamo's hook stays off: clearing it (what ``torch._dynamo.disable`` does) is a no-op."""
    def gate(callback=None, *args, **kwargs):
        if callback is None or callback is False:
            return None
        refuse(what)
        raise RuntimeError(f"the sandbox refuses this: it {what}")

    return gate


def _guarded_call(original, refuse, what, trusted=frozenset(), watched=None):
    """Call ``original`` after ``refuse`` has looked at the stack. The original is held by a
    generator's frame, so the gate's closure does not lead to it. A mode of one of the ``trusted``
    classes (the harness's own op log and host-read log) may be pushed again while the candidate
    runs: torch pops a Python mode while its handler runs and pushes it back after, so every
    ``torch.nn.functional`` call the candidate makes under the harness's mode pushes it.
    ``watched(args, kwargs)``, when given, says which calls are looked at (the others pass)."""
    def run():
        result = None
        while True:
            args, kwargs = yield result
            if (watched(args, kwargs) if watched is not None else True) and not (args and type(args[0]) in trusted):
                refuse(what)
            try:
                result = (True, original(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - re-raised by the gate
                result = (False, exc)

    gen = run()
    next(gen)
    send = gen.send

    def gate(*args, **kwargs):
        ok, value = send((args, kwargs))
        if ok:
            return value
        raise value

    return gate


def _methods() -> dict[str, Callable[[], tuple[type, str]]]:
    def compilation_unit():
        import torch

        return torch._C.CompilationUnit, "define"

    def operator_handle():
        import torch

        return torch._C._DispatchOperatorHandle, "redispatch_boxed"

    return {"torch._C.CompilationUnit.define": compilation_unit,
            "torch._C._DispatchOperatorHandle.redispatch_boxed": operator_handle}


_METHODS = _methods()


def _operator_of(existing):
    """For the gate on an operator handle's ``redispatch_boxed``: the candidate's own operators may be
    redispatched (``torch.library.custom_op`` does it for its autograd), the library's (``aten``,
    ``prims``) not while the candidate runs."""
    def watched(args, kwargs):
        try:
            return args[0].schema().name.split("::")[0] in existing
        except (AttributeError, IndexError, RuntimeError):
            return True

    return watched


def _library_of(existing):
    """For the gate on ``torch._C._dispatch_library``: a library of kernels (``torch.library.Library``,
    ``register_kernel``, ``torch.library.impl``) for the candidate's own operators only. A kernel
    registered for an operator of a namespace that existed before the candidate (``aten::clone``,
    ``aten::zero_``) would run its code wherever the harness calls that operator (copying outputs,
    loading inputs, flushing L2) and hide ops from the CPU's op log. Defining a new namespace, and
    fragments of it, stay allowed."""
    def watched(args, kwargs):
        kind = args[0] if args else kwargs.get("kind")
        ns = args[1] if len(args) > 1 else kwargs.get("ns")
        return kind != "DEF" and ns in existing

    return watched


def _fresh_builtins_only(original, refuse, loaded):
    """A builtin module loaded before the candidate is never created again (a second ``_signal``
    would bring an ungated ``signal``); others are created as before."""
    def run():
        result = None
        while True:
            spec = yield result
            name = getattr(spec, "name", None)
            if type(name) is not str or name in loaded:
                refuse(f"re-creates the builtin module {name!r}")
                result = (False, ImportError(f"the sandbox refuses to create {name!r} again"))
                continue
            try:
                result = (True, original(spec))
            except BaseException as exc:  # noqa: BLE001 - re-raised by the gate
                result = (False, exc)

    gen = run()
    next(gen)
    send = gen.send

    def create_builtin(spec):
        ok, value = send(spec)
        if ok:
            return value
        raise value

    return create_builtin
