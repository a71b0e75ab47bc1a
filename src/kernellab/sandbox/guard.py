"""Nothing in the candidate's process decides anything: the guard around the harness in the child.

The candidate's code runs in the interpreter that also calls it, times it and sends its results
(``child.py``). Three mechanisms keep the candidate out of the harness; none lists exploit
spellings, each closes a way of reaching an object at its source:

1. **Out of reach** (``concealment``). Before the candidate is imported, the ``kernellab`` modules
   leave ``sys.modules``, the harness's classes leave ``type.__subclasses__``, the fork server's
   module leaves ``__main__``, and the wrappers the harness installs into Triton hold globals with
   nothing of it. What remains that leads into the harness (its frames, the collector's object
   graph, trace functions, code objects) is what Python audits (PEP 578), and unaudited entry points
   that hand out frames or the harness's own operations (``signal.signal``, Dynamo's frame hook,
   tensor modes, re-creating a builtin module) are replaced by gates.
2. **Audited** (this module). An audit hook, which nothing can remove, decides every audited reach
   by who asked. The candidate is any code that does not come from a file of the Python installation,
   its site-packages or kernellab (its own file, code it built, code it had a library build); the
   guard looks through introspection helpers that hand a frame, or the description of the stack
   above, to their caller (``inspect``, ``traceback.walk_*``/``*_stack``, ``logging.currentframe``).
   The candidate may not take a frame, walk the object graph, install a trace or profile function,
   add an audit hook, swap a library function's code, build code or run library code under its own
   globals, use ctypes, import kernellab, import again a module that was loaded before it, or run
   code from a library file written after the guard was armed. While the candidate runs, a library
   known to take a frame for itself (``logging``, ``typing``, ``namedtuple``, ``enum``, ``warnings``,
   ``torch.library``) may, once everything it could hand the frame to is verified unchanged; any
   other library is refused the frame (an exception, not a violation: it may be innocent).
3. **Verified** (``integrity``). What the candidate can still rebind (module, class and builtin
   namespaces, closure cells, signal handlers, trace functions, mode stacks, import hooks) is recorded
   when the guard is armed and compared after every request (``Guard.check``) and, through
   ``sys.audit(CALL_RETURNED)``, after every call where the harness asks.

A breach writes one line to the child's log and ends the process with ``os._exit``: ESCAPE_STATUS
(``process_escape``) or TAMPER_STATUS (``timer_tamper``, when what was touched times calls). The
judge maps the status to the violation. Dying is unforgeable in the useful direction: a candidate
that exits with that status only fails itself.

Cost: every audited event calls the hook; events it does not watch return after one set lookup.
Watched events are rare in a kernel's calls (frames, imports, code objects): their cost is the stack
walk, ~1 µs per frame, plus a full verification where a library takes a frame while the candidate
runs. ``docs/verifier.md`` has the measured numbers.
"""

from __future__ import annotations

import gc
import logging
import os
import sys
import sysconfig
import time
import traceback
import types
from collections.abc import Callable

from kernellab.sandbox import concealment, integrity

ESCAPE_STATUS = 86
TAMPER_STATUS = 87
VIOLATION_OF_STATUS = {ESCAPE_STATUS: "process_escape", TAMPER_STATUS: "timer_tamper"}
LINE_PREFIX = "kernellab guard: "
CALL_RETURNED = "kernellab.call_returned"  # sys.audit(CALL_RETURNED) after a candidate call: a quick check

_gc_collect = gc.collect  # bound at import: the collector the harness runs as the candidate's (Guard.collect)
_FRAME_EVENTS = frozenset({"sys._getframe", "sys._current_frames", "sys._current_exceptions",
                           "sys._getframemodulename"})
_FRAME_GETTERS = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
_REBINDING = frozenset({"__code__", "__defaults__", "__kwdefaults__", "__bases__", "__class__"})
_GRAPH_EVENTS = frozenset({"gc.get_objects", "gc.get_referrers", "gc.get_referents"})
_CTYPES_EVENTS = frozenset({
    "ctypes.addressof", "ctypes.call_function", "ctypes.cdata", "ctypes.cdata/buffer", "ctypes.create_string_buffer",
    "ctypes.create_unicode_buffer", "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.get_errno",
    "ctypes.get_last_error", "ctypes.seh_exception", "ctypes.set_errno", "ctypes.set_last_error",
    "ctypes.set_exception", "ctypes.string_at", "ctypes.wstring_at", "ctypes.PyObj_FromPtr"})
_MEMORY_EVENTS = frozenset({"ctypes.cdata", "ctypes.cdata/buffer", "ctypes.string_at", "ctypes.wstring_at",
                            "ctypes.PyObj_FromPtr"})  # reads memory by address: refused on anyone's behalf
# What creates, changes or removes a file besides an ``open`` for writing: inside its own folders too,
# the candidate could delete or hide (chmod) a compile the judge must read, or plant one.
_FILE_CHANGES = frozenset({"os.rename", "os.replace", "os.remove", "os.rmdir", "os.mkdir", "os.truncate",
                           "os.symlink", "os.link", "os.chmod", "os.chown", "os.utime", "os.setxattr",
                           "os.removexattr", "os.chflags", "os.mknod", "os.mkfifo"})
_WATCHED = _FRAME_EVENTS | _GRAPH_EVENTS | _CTYPES_EVENTS | _FILE_CHANGES | frozenset({
    "import", "object.__getattr__", "object.__setattr__", "sys.settrace", "sys.setprofile", "sys.addaudithook",
    "exec", "function.__new__", "code.__new__", "marshal.loads", "marshal.load", "open", "os.rename", "os.replace",
    CALL_RETURNED})


class Guard:
    """The harness's handle on the armed guard; only the harness's own locals hold it."""

    __slots__ = ("check", "untrust", "gated", "_callbacks")

    def __init__(self, check: Callable[[], None], untrust: Callable[[str], None], gated: list[str],
                 callbacks: Callable[[bool], None]):
        self.check = check  # verify everything recorded; a breach ends the process
        self.untrust = untrust  # the candidate's file: its code is the candidate's wherever it lies
        self.gated = gated
        self._callbacks = callbacks

    def collect(self, generation: int = 2) -> None:
        """Run the cyclic collector (the candidate's finalizers) as the candidate's code: whatever
        runs in it is refused a frame, the object graph, a trace function or memory by address, and
        asking ends the process, whoever is on the stack."""
        self._callbacks(True)
        try:
            _gc_collect(generation)
        finally:
            self._callbacks(False)


def trusted_prefixes() -> tuple[str, ...]:
    """Where code that is not the candidate's comes from: the Python installation, its site-packages,
    and the directory of every package loaded before the candidate (kernellab's own included)."""
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(k)}
    try:
        import site

        dirs.update(site.getsitepackages())
    except (AttributeError, ImportError):
        pass
    if sys.pycache_prefix:  # where the installation's bytecode caches go, when not beside the sources
        dirs.add(sys.pycache_prefix)
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if type(path) is str and getattr(module, "__spec__", None) is not None and "." not in module.__spec__.name:
            dirs.add(os.path.dirname(path) if hasattr(module, "__path__") else path)
    prefixes = {os.path.join(os.path.realpath(d), "") if os.path.isdir(d) else os.path.realpath(d) for d in dirs}
    prefixes |= {os.path.join(d, "") for d in dirs if os.path.isdir(d)}
    return tuple(sorted(prefixes, key=len)) + ("<frozen ",)  # shortest first: package_of


# Libraries known to take a frame while the candidate runs and keep it to themselves (each returns a
# name or a file:line, never the frame): what namedtuple, typing.NamedTuple/TypeVar, the functional enum
# API and logging's caller lookup do for a candidate, and torch.library registering a custom op. Any
# other library is refused the frame while candidate code is on the stack (an exception, not a
# violation): a helper that hands frame contents back to its caller (torch._jit_internal's resolution
# callbacks, a StackSummary subclass fed by traceback.walk_stack) is a way in for the candidate.
_FRAME_CONSUMERS = ("typing", "typing_extensions", "collections", "enum", "logging", "warnings", "torch.library",
                    "torch._library")


def frame_consumers() -> tuple[str, ...]:
    """The files (a package: its directory) of the loaded ``_FRAME_CONSUMERS``, and the harness's own
    op log (``evidence.py``), which looks at the issuing frame of each op to tell the interpreter's
    ops from the candidate's, and gap classifier (``interpreter_gap.py``), which reads the code of
    each frame of a traceback; both keep nothing of the frames."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, "evidence.py"), os.path.join(here, "interpreter_gap.py")]
    for name in _FRAME_CONSUMERS:
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if type(path) is str:
            found.append(os.path.join(os.path.dirname(path), "") if hasattr(module, "__path__") else path)
    return tuple(found)


# What a frame is asked for by, in the bytecode of the libraries allowed to ask (the consumers,
# ``traceback``, ``inspect``): a call of one of these names, or a read of one of these attributes.
_GETTER_NAMES = frozenset({"_getframe", "_getframemodulename", "_current_frames", "_current_exceptions",
                           "currentframe"})
_HELPER_NAMES = _GETTER_NAMES | frozenset({"walk_tb", "walk_stack", "_walk_tb_with_full_positions", "extract_stack",
                                           "format_stack", "print_stack", "stack", "trace", "getouterframes",
                                           "getinnerframes"})
_ATTR_NAMES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame"})
# Loops that take frames from a frame generator of ``traceback``'s (where a traceback is formatted).
_FRAME_LOOPS = frozenset({"_extract_from_extended_frame_gen", "extended_frame_gen"})


def _codes(module: types.ModuleType) -> list[types.CodeType]:
    """Every code object of a module's functions and classes, nested ones included."""
    found: list[types.CodeType] = []
    pending: list[object] = list(vars(module).values())
    seen: set[int] = set()
    while pending:
        value = pending.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, (staticmethod, classmethod)):
            pending.append(value.__func__)
        elif isinstance(value, property):
            pending.extend(f for f in (value.fget, value.fset, value.fdel) if f is not None)
        elif isinstance(value, types.FunctionType):
            pending.append(value.__code__)
            # what a decorator wraps (torch wraps a mode's ``__torch_dispatch__``)
            wrapped = getattr(value, "__wrapped__", None)
            if wrapped is not None:
                pending.append(wrapped)
            pending.extend(cell.cell_contents for cell in value.__closure__ or ()
                           if isinstance(getattr(cell, "cell_contents", None), types.FunctionType))
        elif isinstance(value, types.CodeType):
            found.append(value)
            pending.extend(c for c in value.co_consts if isinstance(c, types.CodeType))
        elif isinstance(value, type) and getattr(value, "__module__", None) == module.__name__:
            pending.extend(vars(value).values())
    return found


def frame_sites(paths: tuple[str, ...]) -> tuple[frozenset, frozenset, frozenset, list]:
    """Where, in the code of the loaded modules under ``paths``, a frame is asked for by that code
    itself: ``(id(code), offset)`` of each call of a frame getter or read of a frame attribute
    (``getters``), of each call of a helper that hands frames to its caller or loop over a frame
    generator (``helpers``), and the files scanned. A builtin the candidate registered as a callback
    (``map(sys._getframe, ...)``) asks with the calling frame at some other instruction: a ``str()``
    of the candidate's object, a drop of a reference. Also the code objects, kept alive (ids)."""
    import dis

    getters, helpers, files, codes = set(), set(), set(), []
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if type(path) is not str or not path.startswith(paths):
            continue
        for code in _codes(module):
            if code.co_filename != path:  # a function another module defined, imported here
                continue
            codes.append(code)
            files.add(code.co_filename)
            pending = None
            instructions = list(dis.get_instructions(code))
            for ins, after in zip(instructions, instructions[1:] + [None]):
                # A frame reports any code unit of the instruction it runs: its inline caches too
                # (Python 3.11 and 3.12 point past them while a called Python function runs).
                units = {(id(code), o) for o in range(ins.offset, after.offset if after else ins.offset + 2, 2)}
                if ins.opname.startswith("LOAD") and ins.argval in _HELPER_NAMES:
                    pending = ins.argval
                elif ins.opname.startswith(("CALL", "PRECALL")) and pending is not None:
                    # Python 3.11 calls a builtin from a specialised PRECALL, 3.12 from CALL.
                    if pending in _GETTER_NAMES:
                        getters.update(units)
                    helpers.update(units)
                    if ins.opname.startswith("CALL"):
                        pending = None
                elif ins.opname == "LOAD_ATTR" and ins.argval in _ATTR_NAMES:
                    getters.update(units)
                elif ins.opname == "FOR_ITER" and code.co_name in _FRAME_LOOPS:
                    helpers.update(units)
    return frozenset(getters), frozenset(helpers), frozenset(files), codes


def _site_paths() -> tuple[str, ...]:
    return frame_consumers() + (traceback.__file__, __import__("inspect").__file__)


_PREPARED: list[tuple[integrity.Record, dict, frozenset, tuple, tuple]] = []


def prepare() -> None:
    """Do the slow part of arming once, in the fork server before it forks: record what the guard
    will verify (``integrity.prepare``) and find where the gated entry points are bound. Every child
    shares both and brings them up to date in milliseconds when it arms."""
    originals = concealment.gated_entry_points()
    _PREPARED[:] = [(integrity.prepare(), concealment.gate_sites(originals), frozenset(sys.modules),
                     trusted_prefixes(), frame_sites(_site_paths()))]


def arm() -> Guard:
    """Arm the guard in a candidate child, after the harness exists and before the candidate is
    imported. Irreversible: the audit hook cannot be removed."""
    prepared, sites, prepared_modules, prefixes, frames = _PREPARED.pop() if _PREPARED else \
        (None, {}, frozenset(), None, None)
    config = {
        "prefixes": prefixes or trusted_prefixes(),
        "passing_files": frozenset({__import__("inspect").__file__}),
        # Helpers that hand the caller a frame, or the description of every frame above it (which
        # names the harness's functions: how a candidate would tell a timed call from a checked one).
        "passing_codes": tuple(f.__code__ for f in (traceback.walk_stack, traceback.walk_tb, traceback.extract_stack,
                                                    traceback.format_stack, traceback.print_stack,
                                                    getattr(traceback, "_walk_tb_with_full_positions", None),
                                                    logging.currentframe) if isinstance(f, types.FunctionType)),
        "importlib_files": frozenset({"<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"}),
        "consumers": frame_consumers(),
        "timing_modules": integrity.TIMING_MODULES,
        "loaded": frozenset(sys.modules),
        "armed_ns": time.time_ns(),
        "stat": os.stat, "getframe": sys._getframe, "get_ident": __import__("_thread").get_ident,
        "write": os.write, "exit": os._exit, "function_type": types.FunctionType, "module_type": types.ModuleType,
        "code_type": types.CodeType, "tensor_type": _tensor_base(),
        "statuses": (ESCAPE_STATUS, TAMPER_STATUS, VIOLATION_OF_STATUS),
        "line_prefix": LINE_PREFIX, "watched": _WATCHED, "frame_getters": _FRAME_GETTERS, "rebinding": _REBINDING,
        "frame_events": _FRAME_EVENTS, "graph_events": _GRAPH_EVENTS, "memory_events": _MEMORY_EVENTS,
        "file_changes": _FILE_CHANGES, "compile_codes": compile_codes(),
        "triton_compile_file": os.path.join("triton", "compiler", "compiler.py"),
        "thread_start": concealment.THREAD_START,
        "traceback_file": traceback.__file__,
        "frame_sites": frames or frame_sites(_site_paths()),
    }
    hook, refuse, untrust, check, set_verify, callbacks = concealment.sealed(_make_policy)(config)
    hidden = concealment.harness_classes()
    redrop = concealment.hide_harness(hidden)
    originals = concealment.gated_entry_points()
    for label, found in concealment.gate_sites(originals, skip=prepared_modules).items():
        sites.setdefault(label, []).extend(found)
    gated = concealment.install_gates(refuse, originals, sites, frozenset(hidden))
    type_dict = concealment._real_dict(type)
    probes = [("type.__subclasses__", type_dict.get, ("__subclasses__",), type_dict.get("__subclasses__"), True)]
    record = integrity.refresh(prepared, probes)
    set_verify(integrity.verifier(record, redrop))
    sys.addaudithook(hook)
    return Guard(check, untrust, gated, callbacks)


def compile_codes() -> frozenset[tuple[str, str]]:
    """(file, function) of the harness's wrappers around compiles (``child._timing``'s, which wrap
    Triton's JIT compile and launcher builds, and ``own_compiles``' ``load_inline``): files written
    from inside one of them are a compile's."""
    here = os.path.dirname(os.path.abspath(__file__))
    return frozenset({(os.path.join(here, "child.py"), "timed"), (os.path.join(here, "own_compiles.py"), "load_inline")})


def _tensor_base() -> type | None:
    """torch's tensor base class where torch is loaded (the child always has it)."""
    torch = sys.modules.get("torch")
    return getattr(getattr(torch, "_C", None), "TensorBase", None)


def _make_policy(cfg):  # noqa: C901 - one sealed closure on purpose: its helpers must not be module globals a candidate can patch
    """The audit hook and its helpers; built by ``concealment.sealed`` (private globals)."""
    prefixes, passing_files = cfg["prefixes"], cfg["passing_files"]
    passing_codes = frozenset(id(c) for c in cfg["passing_codes"])  # code of functions that live on
    frame_events, graph_events, memory_events = cfg["frame_events"], cfg["graph_events"], cfg["memory_events"]
    file_changes, compile_codes, triton_compile_file = cfg["file_changes"], cfg["compile_codes"], \
        cfg["triton_compile_file"]
    consumers = cfg["consumers"]
    importlib_files, timing_modules, loaded = cfg["importlib_files"], cfg["timing_modules"], cfg["loaded"]
    getframe, get_ident, write, exit_, stat = cfg["getframe"], cfg["get_ident"], cfg["write"], cfg["exit"], cfg["stat"]
    function_type, module_type, code_type = cfg["function_type"], cfg["module_type"], cfg["code_type"]
    tensor_type = cfg["tensor_type"]
    armed_ns, thread_start = cfg["armed_ns"], cfg["thread_start"]
    escape, tamper, names = cfg["statuses"]
    line_prefix = cfg["line_prefix"]
    trust: dict = {}
    untrusted: set = set()
    busy: set = set()
    verify_box = [None]
    in_callbacks = [False]
    from_callbacks = "from a finalizer or callback (while the harness ran the candidate's finalizers)"
    traceback_file = cfg["traceback_file"]
    getter_sites, helper_sites, scanned, _site_codes = cfg["frame_sites"]
    import_reads: dict = {}  # thread -> files the import system read since it last ran a module
    import_writes: set = set()  # bytecode caches the import system wrote itself

    def trusted(filename):
        known = trust.get(filename)
        if known is None:
            known = type(filename) is str and filename not in untrusted and filename.startswith(prefixes)
            trust[filename] = known
        return known

    def package_of(filename):
        """The installed package (or the standard library module) a trusted file belongs to: the
        first path component under the outermost trusted directory holding it."""
        for prefix in prefixes:  # shortest first
            if filename.startswith(prefix):
                return prefix + filename[len(prefix):].split("/", 1)[0]
        return None

    def requester(frame):
        """The frame that asked, looking through helpers that hand a frame to their caller."""
        while frame is not None:
            code = frame.f_code
            if code.co_filename not in passing_files and id(code) not in passing_codes:
                return frame
            frame = frame.f_back
        return None

    def by_candidate(frame):
        """The asking frame if it is the candidate's, else None."""
        asking = requester(frame)
        return asking if asking is not None and not trusted(asking.f_code.co_filename) else None

    def consumer_between(frame):
        """Whether a known frame consumer is among the trusted frames between ``frame`` and the
        nearest frame of the candidate's."""
        while frame is not None:
            filename = frame.f_code.co_filename
            if not trusted(filename):
                return False
            if filename.startswith(consumers):
                return True
            frame = frame.f_back
        return False

    def candidate_on_stack(frame):
        while frame is not None:
            if not trusted(frame.f_code.co_filename):
                return frame
            frame = frame.f_back
        return None

    def breach(status, what, frame):
        where = ""
        if frame is not None:
            where = " (" + frame.f_code.co_filename + ":" + str(frame.f_lineno) + ")"
        line = line_prefix + names[status] + ": the candidate " + what + where + "\n"
        write(2, line.encode("utf-8", "replace"))
        exit_(status)

    def refused(violation, refusal):
        """No frame of the candidate's asked: while the harness runs the candidate's finalizers that
        is still the candidate (``violation`` ends the process); anywhere else the asking library or
        callback gets ``refusal`` as an exception."""
        if in_callbacks[0]:
            breach(escape, violation, None)
        raise RuntimeError(refusal)

    def place(frame):
        """file:function of a frame, for a refusal's message (built only when refusing)."""
        return frame.f_code.co_filename + ":" + frame.f_code.co_name if frame is not None else "?"

    def verified(frame, when):
        verify = verify_box[0]
        failure = verify(1) if verify is not None else None
        if failure is not None:
            timing, what = failure
            breach(tamper if timing else escape, "rebound what the harness relies on: " + what + when, frame)

    def timing_module(obj):
        module = obj.__module__ if type(obj) is function_type else None
        return type(module) is str and module in timing_modules

    def fresh(path):
        try:
            return stat(path).st_mtime_ns >= armed_ns
        except OSError:
            return False

    def same_code(source, code):
        """``code`` is what compiling ``source`` gives (a bytecode cache another child wrote is)."""
        try:
            with open(source, "rb") as file:
                return compile(file.read(), source, "exec", dont_inherit=True) == code
        except (OSError, SyntaxError, ValueError):
            return False

    def module_file_problem(code, tid):
        """What is wrong with the files the import system ran ``code`` from, or None.

        Code that claims a library's name must come from a library file that existed before the
        guard was armed (or a bytecode cache of that file, however recent): not a planted module,
        not planted bytecode, not a file outside the trusted directories."""
        for path in import_reads.pop(tid, ()):
            if not trusted(path):
                return "runs code named " + code.co_filename + " from " + path
            if path in import_writes or not fresh(path):
                continue
            if path.endswith(".pyc") and not fresh(code.co_filename) and same_code(code.co_filename, code):
                continue
            return "runs code from a library file written after the sandbox started: " + path
        return None

    def writes(event, args):
        """Whether an ``open`` writes (every other file event changes something)."""
        if event != "open":
            return True
        mode, flags = args[1], args[2]
        if type(mode) is str:
            return "w" in mode or "a" in mode or "x" in mode or "+" in mode
        return type(flags) is int and flags & 0o3103 != 0  # O_WRONLY|O_RDWR|O_CREAT|O_TRUNC|O_APPEND

    def writer_outside_a_compile(caller):
        """The candidate's frame if a file is written with its code nearer on the stack than any
        compile (a compile the harness wraps, or Triton's ``compile``): a library helper it calls
        that writes (a cache's ``put``, a logging handler, ``Path.write_text``) writes bytes of its
        choosing, where the judge may read them as a compile's. A compile it starts writes from
        inside that compile; code of its own called back from there (a stage hook) is nearer again."""
        frame = caller
        while frame is not None:
            code = frame.f_code
            if not trusted(code.co_filename):
                return frame
            if (code.co_filename, code.co_name) in compile_codes or \
                    code.co_name == "compile" and code.co_filename.endswith(triton_compile_file):
                return None
            frame = frame.f_back
        return None

    def decide(event, args, caller):  # noqa: C901 - the audit hook's one dispatch, inside the sealed closure above
        if event == "kernellab.call_returned":
            verify = verify_box[0]
            failure = verify(0) if verify is not None else None
            if failure is not None:
                breach(tamper if failure[0] else escape, "rebound what the harness relies on: " + failure[1],
                       candidate_on_stack(caller))
            return
        if event in frame_events or event == "object.__getattr__" and args[1] != "f_code":
            what = event if event != "object.__getattr__" else "." + args[1]
            frame = by_candidate(caller)
            if frame is not None:
                breach(escape, "takes a frame of the call stack (" + what + ")", frame)
            asking = requester(caller)
            consumer = asking is not None and asking.f_code.co_filename.startswith(consumers)
            # Code of the libraries allowed a frame asks at an instruction of its own that asks for
            # one; any other instruction there means a builtin asked on someone's behalf (a callback
            # of the candidate's run by that library: a ``str()`` of its object, a reference dropped).
            if caller is not None and caller.f_code.co_filename in scanned and \
                    (id(caller.f_code), caller.f_lasti) not in getter_sites or \
                    asking is not None and asking is not caller and asking.f_code.co_filename in scanned and \
                    (id(asking.f_code), asking.f_lasti) not in helper_sites:
                where = place(asking)
                refused("takes a frame of the call stack (" + what + ") through a builtin called back from " + where,
                        "the sandbox refuses " + where + " a frame of the call stack (" + what + ") asked for by a "
                        "builtin it called back")
            if in_callbacks[0] and not consumer:
                breach(escape, "takes a frame of the call stack (" + what + ") " + from_callbacks, None)
            frame = candidate_on_stack(caller)
            if frame is not None:
                if not consumer_between(caller):
                    raise RuntimeError("the sandbox refuses " + place(asking) + " a frame of the call stack while "
                                       "candidate code runs (" + what + ")")
                verified(frame, " (found when a library took a frame for it)")
            elif not consumer and not (asking is not None and asking.f_code.co_filename == traceback_file):
                # Whoever asks: a builtin the candidate registered as a callback (``map(sys._getframe,
                # ...)`` in a finalizer, a weakref callback run where the harness drops an object) asks
                # with only the harness's frames on the stack. The harness takes frames only through
                # the known consumers and formats tracebacks (text) through ``traceback``.
                raise RuntimeError("the sandbox refuses " + place(asking) + " a frame of the call stack (" + what + ")")
            return
        if event == "object.__getattr__":  # f_code: only who holds a frame reads it
            frame = by_candidate(caller)
            if frame is not None:
                breach(escape, "walks frames of the call stack (.f_code)", frame)
            return
        if event in graph_events:
            frame = by_candidate(caller)
            if frame is not None:
                breach(escape, "walks the object graph (" + event + ")", frame)
            # Whoever asks (the harness reads no object graph once armed): a library would hand what
            # it found to its caller, and a callback of the candidate's asks with no frame of its own.
            refused("walks the object graph (" + event + ") " + from_callbacks,
                    "the sandbox refuses the object graph (" + event + ")")
        if event in ("sys.settrace", "sys.setprofile"):
            frame = candidate_on_stack(caller)
            if frame is not None:
                breach(escape, "installs a trace or profile function (" + event + ")", frame)
            refused("installs a trace or profile function (" + event + ") " + from_callbacks,
                    "the sandbox refuses a trace or profile function (" + event + "): it is handed every frame")
        if event == "sys.addaudithook":
            breach(escape, "adds an audit hook", candidate_on_stack(caller) or caller)
        if event == "import":
            name = args[0]
            if type(name) is not str:
                return
            harness = name == "kernellab" or name.startswith("kernellab.")
            if harness or name in loaded:
                frame = candidate_on_stack(caller)
                if frame is not None:
                    breach(escape, ("imports " + name) if harness else
                           ("imports " + name + " again after removing it from sys.modules"), frame)
            return
        if event == "object.__setattr__":
            target, attr, value = args[0], args[1], args[2]
            if type(value) is code_type and trusted(value.co_filename):
                frame = candidate_on_stack(caller)
                if frame is not None and not (type(target) is function_type and target.__code__ is value):
                    breach(escape, "installs code that claims to come from " + value.co_filename, frame)
            frame = by_candidate(caller)
            if frame is None:
                return
            if attr == "__class__":
                if type(target) is module_type or type(target) is function_type or issubclass(type(target), type):
                    breach(escape, "changes the class of a module, function or class", frame)
                if tensor_type is not None and issubclass(type(target), tensor_type):
                    # A class of its own on a tensor the harness handles (a timing slot's input) would
                    # run its __torch_function__ in the harness's reads, copies and loads.
                    breach(escape, "changes the class of a tensor", frame)
                return
            if attr == "__bases__":
                breach(escape, "changes the bases of a class", frame)
            if type(target) is function_type and trusted(target.__code__.co_filename):
                module = target.__module__
                breach(tamper if timing_module(target) else escape, "replaces " + attr + " of "
                       + (module if type(module) is str else "?") + "." + target.__qualname__, frame)
            return
        if event == "code.__new__" or event in ("marshal.loads", "marshal.load"):
            frame = by_candidate(caller)
            if frame is not None:
                breach(escape, "builds code objects (" + event + ")", frame)
            return
        if event == "open" or event in file_changes:
            if caller is not None and writes(event, args):
                frame = by_candidate(caller)
                if frame is not None:
                    breach(escape, "writes a file (" + event + ")", frame)
                frame = writer_outside_a_compile(caller)
                if frame is not None:
                    breach(escape, "writes a file through " + caller.f_code.co_filename + " ("
                           + caller.f_code.co_name + "), not by compiling", frame)
            if event not in ("open", "os.rename", "os.replace"):
                return
            if caller is None or caller.f_code.co_filename not in importlib_files:
                return
            path = args[1] if event != "open" else args[0]
            if type(path) is bytes:
                path = path.decode("utf-8", "surrogateescape")
            if type(path) is not str:
                return
            if event != "open":
                import_writes.add(path)
            elif args[1] == "r" or args[1] == "rb":
                import_reads.setdefault(get_ident(), []).append(path)
            return
        if event == "exec" or event == "function.__new__":
            code = args[0]
            if type(code) is not code_type:
                return
            if not trusted(code.co_filename):
                if event == "exec" and caller is not None and caller.f_code.co_filename in importlib_files:
                    import_reads.pop(get_ident(), None)  # the candidate's own module, or code it named so
                return
            asking = requester(caller)
            if event == "exec" and asking is not None and asking.f_code.co_filename in importlib_files:
                problem = module_file_problem(code, get_ident())
                if problem is not None:
                    untrusted.add(code.co_filename)
                    trust.pop(code.co_filename, None)
                    breach(escape, problem, candidate_on_stack(caller))
                return
            frame = candidate_on_stack(caller)
            if frame is None:
                return
            if asking is None or not trusted(asking.f_code.co_filename) or \
                    package_of(asking.f_code.co_filename) != package_of(code.co_filename):
                # a library runs its own code (Triton's interpreter recompiles triton.language's
                # functions); code that names a library it does not come from is forged
                breach(escape, "runs code under the name of " + code.co_filename + " (" + event + ")", frame)
            return
        if event in memory_events:
            frame = candidate_on_stack(caller)
            if frame is not None:
                breach(escape, "reads memory by address (" + event + ")", frame)
            refused("reads memory by address (" + event + ") " + from_callbacks,
                    "the sandbox refuses reading memory by address (" + event + ")")
        if event.startswith("ctypes."):
            frame = by_candidate(caller)
            if frame is not None:
                breach(escape, "uses ctypes (" + event + ")", frame)

    def hook(event, args):
        if event not in watched:
            return
        if event == "object.__getattr__":
            if args[1] not in frame_getters and args[1] != "f_code":
                return
        elif event == "object.__setattr__":
            if args[1] not in rebinding:
                return
        elif event == "open":
            if type(args[0]) is int:
                return
        tid = get_ident()
        if tid in busy:
            return
        busy.add(tid)
        try:
            try:
                caller = getframe(1)
            except ValueError:
                caller = None
            decide(event, args, caller)
        finally:
            busy.discard(tid)

    def refuse(what):
        """For the gates: the candidate on the stack ends the process. A thread start ends it whoever
        asks: the harness starts none once armed, and a finalizer of the candidate's (run by the
        collector from the harness's frames) or a builtin it registered as a callback asks with no
        frame of the candidate's on the stack."""
        tid = get_ident()
        busy.add(tid)
        try:
            frame = candidate_on_stack(getframe(1))
        finally:
            busy.discard(tid)
        if frame is not None:
            breach(escape, what, frame)
        if what == thread_start:
            breach(escape, what + ", from a finalizer or callback (no frame of its own on the stack)", None)

    def untrust(path):
        untrusted.add(path)
        trust.pop(path, None)

    def check():
        verify = verify_box[0]
        failure = verify(2) if verify is not None else None
        if failure is not None:
            breach(tamper if failure[0] else escape, "rebound what the harness relies on: " + failure[1], None)

    def set_verify(verify):
        verify_box[0] = verify

    def callbacks(on):
        """While on, what runs is the candidate's callbacks (the collector running its finalizers at
        a point the harness chose): a frame, the object graph, a trace function or memory by address
        asked for then ends the process, with or without a frame of the candidate's on the stack."""
        in_callbacks[0] = on

    watched, frame_getters, rebinding = cfg["watched"], cfg["frame_getters"], cfg["rebinding"]
    return hook, refuse, untrust, check, set_verify, callbacks
