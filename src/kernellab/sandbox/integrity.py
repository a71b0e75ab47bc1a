"""What the harness relies on that the candidate can still reach, recorded before the candidate runs
and compared after every request.

The candidate can rebind what no audit event covers: a module attribute (``vars(torch)['x'] = ...``),
a class attribute (``type.__setattr__(torch.cuda.Event, ...)``), a builtin, a closure cell, a signal
handler, a mode left on torch's stacks. ``prepare`` records every namespace loaded: each module's
dict, each (mutable) class's dict reachable from one, the builtins; ``refresh`` brings the record up
to date when the guard is armed (modules imported since, namespaces the harness changed since);
``verifier`` compares. Rules, per namespace:

- the harness's own namespaces: no entry rebound, removed or added;
- library modules and classes, the builtins: no entry that held code (a function, class, module,
  descriptor: what a call resolves to) rebound or removed; no name added that would shadow a builtin
  (modules), no code added (classes, builtins: a method added to ``torch.Tensor`` shadows the C one)
  and no special method added (``__getattr__``); data may change (libraries keep state in class
  attributes: singletons, counters, ``torch.cuda.graph``'s default capture stream);
- closure cells of functions in ``hot`` namespaces, and process state read through C functions:
  signal handlers, trace and profile functions, the tensor mode stacks, Dynamo's frame callback,
  the import hooks.

Cost: each dict carries a version tag that CPython (3.11-3.13) changes on every write; the verifier
reads it first and compares entries only in a namespace whose tag moved, then accepts its data
changes. Where tags are missing (other versions, other implementations) only ``hot`` namespaces are
compared, entry by entry. ``hot``: the builtins, the harness, torch's tensor, CUDA, autograd and mode
namespaces, time and numpy: what the harness runs between two calls of the candidate, which is also
what a per-call check (``guard.CALL_RETURNED``) reads.

What verification after the fact cannot see: a rebinding undone before the check (hence checks per
request in ``child.main`` and per call where the harness asks); namespaces created after arming;
function ``__dict__`` entries; a data global turned into a function.
"""

from __future__ import annotations

import builtins
import ctypes
import gc
import sys
import types
from collections.abc import Callable
from typing import Any

from kernellab.sandbox.concealment import is_harness_module, sealed

# Namespaces whose tampering is timing tampering (threat 8): what the clock and its loop run.
TIMING_MODULES = frozenset({"time", "torch.cuda", "torch.cuda.streams", "torch.cuda.graphs", "triton.testing",
                            "kernellab.sandbox.clock", "kernellab.sandbox.timing_stats"})
_HOT_MODULES = frozenset({"builtins", "time", "numpy", "torch", "torch._C", "torch.cuda", "torch.cuda.streams",
                          "torch.cuda.graphs", "torch.autograd", "torch.autograd.grad_mode", "torch.overrides",
                          "torch.utils._python_dispatch", "torch.nn.modules.module", "torch._tensor",
                          "torch.profiler", "torch.profiler.profiler", "torch.autograd.profiler"})
# What the child's answer is sent with (``channel``): compared after every call, as the hot ones are.
_SEND_MODULES = frozenset({"pickle", "copyreg", "io", "socket", "struct", "torch.multiprocessing",
                           "torch.multiprocessing.reductions", "torch.storage"})
# Rebound by their own library while it runs: Triton's interpreter swaps triton.language's builtins
# for interpreted ones around every launch (and, for a @triton.jit helper called from a kernel, leaves
# them swapped: triton 3.6-3.9). The harness runs nothing from them.
_REBOUND_BY_THEIR_LIBRARY = ("triton.language",)
_DESCRIPTORS = (types.ModuleType, property, staticmethod, classmethod, types.MemberDescriptorType,
                types.GetSetDescriptorType)
# Names that, added to a library module, would shadow a builtin for that module's code.
_BUILTIN_NAMES = frozenset(k for k in builtins.__dict__ if not k.startswith("__"))
_VERSION_OFFSET = 24  # PyDictObject: ob_refcnt, ob_type, ma_used, then ma_version_tag (3.11-3.13)
_HEAPTYPE, _IMMUTABLETYPE = 1 << 9, 1 << 8

# An entry of the record: [label, dict, copy, flags, tag view or None, tag accepted, closure cells]
CLOSED, TIMING, HOT, WHOLE, HOT_CELLS = 1, 2, 4, 8, 16  # WHOLE: every entry is compared, data included
Probe = tuple  # (label, C function, args, expected, hot)


class Record:
    """The namespaces and state the verifier compares, kept as plain lists (no attribute lookups)."""

    __slots__ = ("entries", "by_dict", "modules", "tags", "probes", "lists", "bound")

    def __init__(self, tags: bool):
        self.entries: list[list[Any]] = []
        self.by_dict: dict[int, list[Any]] = {}
        self.modules: set[str] = set()
        self.tags = tags
        self.probes: list[Probe] = []
        self.lists: list[tuple[str, list, tuple]] = []
        # (names, modules, hot) as ``sys.modules`` maps them when the guard is armed
        self.bound: tuple[tuple[str, ...], tuple[Any, ...], tuple[str, ...], tuple[Any, ...]] = ((), (), (), ())


def version_tags_work() -> bool:
    """Dict version tags exist where expected and move on every kind of write (checked, not assumed)."""
    if sys.implementation.name != "cpython" or not (3, 11) <= sys.version_info[:2] <= (3, 13) \
            or ctypes.sizeof(ctypes.c_void_p) != 8:
        return False

    class Probe:
        x = 1

    ns: dict[str, Any] = {"a": 1}
    writes = [(ns, lambda: ns.__setitem__("a", 2)), (ns, lambda: ns.pop("a")), (ns, lambda: ns.update(b=3)),
              (_real_dict(Probe), lambda: setattr(Probe, "x", 2)), (_real_dict(Probe), lambda: setattr(Probe, "y", 1))]
    for d, write in writes:
        tag = ctypes.c_uint64.from_address(id(d) + _VERSION_OFFSET)
        before = tag.value
        write()
        if tag.value == before:
            return False
    return True


_TYPE_ATTRS = {name: vars(type)[name].__get__ for name in ("__dict__", "__flags__", "__qualname__")}


def _real_dict(cls: type) -> dict[str, Any]:
    """The dict behind ``cls.__dict__`` (a read-only proxy), read through ``type``'s own descriptor
    (a metaclass may define a ``__dict__`` of its own)."""
    return gc.get_referents(_TYPE_ATTRS["__dict__"](cls))[0]


def _code_like(value: Any) -> bool:
    return callable(value) or issubclass(type(value), _DESCRIPTORS)


def prepare() -> Record:
    """Record every namespace loaded now. The fork server does this once, before it forks: every
    child shares the record and only ``refresh``es what changed since."""
    rec = Record(version_tags_work())
    _add_loaded(rec)
    return rec


def refresh(rec: Record | None, after_probes: list[Probe]) -> Record:
    """Bring ``rec`` up to date in the child, when the guard is armed: namespaces loaded since are
    added, namespaces that changed since (the harness's own set-up, the gates) are recorded again,
    and the process state is read now. Without version tags everything is recorded again."""
    if rec is None or not rec.tags:
        rec = prepare()
    else:
        for entry in rec.entries:
            if entry[4].value != entry[5]:
                entry[2], entry[5] = dict(entry[1]), entry[4].value
                _note_cells(entry)
        _add_loaded(rec)
    rec.probes = _state_probes() + after_probes
    rec.lists = [("sys.meta_path", sys.meta_path, tuple(sys.meta_path)),
                 ("sys.path_hooks", sys.path_hooks, tuple(sys.path_hooks))]
    rec.bound = _bound_modules()
    return rec


def _bound_modules() -> tuple[tuple[str, ...], tuple[Any, ...], tuple[str, ...], tuple[Any, ...]]:
    """Which module object each name of ``sys.modules`` is bound to now: every name, and the hot ones.

    An ``import`` the harness runs after the candidate (a function-level import, the unpickler's
    lookup of a rebuild function) resolves through ``sys.modules``; a module object put in a library
    module's place there runs the candidate's code in the harness's stead while every recorded
    namespace stays as it was. A name that is missing is fine (a later import runs the library's own
    file, through the import hooks the verifier compares); a name bound to another object is not."""
    names = tuple(sorted(n for n, m in list(sys.modules.items()) if type(getattr(m, "__dict__", None)) is dict))
    hot = tuple(n for n in names if n in _HOT_MODULES or n in TIMING_MODULES or n in _SEND_MODULES)
    return names, tuple(sys.modules[n] for n in names), hot, tuple(sys.modules[n] for n in hot)


def _add(rec: Record, label: str, d: dict[str, Any], owner: str, is_class: bool) -> None:
    if id(d) in rec.by_dict or owner.startswith(_REBOUND_BY_THEIR_LIBRARY):
        return
    harness = is_harness_module(owner)
    timing = owner in TIMING_MODULES
    # Libraries keep mutable state in class attributes too (singletons, counters, torch.cuda.graph's
    # default capture stream): only the harness's own namespaces are compared whole.
    flags = (CLOSED if harness or is_class or owner == "builtins" else 0) | (WHOLE if harness else 0) \
        | (TIMING if timing else 0) | (HOT if harness or owner in _HOT_MODULES or owner in _SEND_MODULES else 0)
    if flags & HOT and (harness or timing or not is_class or label == "class torch.Tensor"):
        flags |= HOT_CELLS  # cells the per-call check reads (not those of every generated SymInt method)
    tag = ctypes.c_uint64.from_address(id(d) + _VERSION_OFFSET) if rec.tags else None
    entry = [label, d, dict(d), flags, tag, tag.value if tag is not None else 0, []]
    _note_cells(entry)
    rec.entries.append(entry)
    rec.by_dict[id(d)] = entry


def _add_loaded(rec: Record) -> None:
    classes: list[tuple[type, str]] = []
    for name, module in list(sys.modules.items()):
        d = getattr(module, "__dict__", None)
        if name in rec.modules or type(d) is not dict:
            continue
        rec.modules.add(name)
        _add(rec, "module " + name, d, name, False)
        classes.extend((v, name) for v in list(d.values()) if issubclass(type(v), type))
    _add(rec, "module builtins", builtins.__dict__, "builtins", False)
    done: set[int] = set()
    while classes:
        cls, owner = classes.pop()
        flags = _TYPE_ATTRS["__flags__"](cls)
        if id(cls) in done or not flags & _HEAPTYPE or flags & _IMMUTABLETYPE:
            continue  # static and immutable types cannot be written to
        done.add(id(cls))
        try:
            d = _real_dict(cls)
        except (IndexError, TypeError):  # a class without a dict of its own: nothing to rebind there
            continue
        if id(d) in rec.by_dict:
            continue
        module = d.get("__module__")
        module = module if type(module) is str else owner
        _add(rec, f"class {module}.{_TYPE_ATTRS['__qualname__'](cls)}", d, module, True)
        classes.extend((v, module) for v in list(d.values()) if issubclass(type(v), type))


def _note_cells(entry: list[Any]) -> None:
    """Closure cells of the functions in a hot namespace: ``cell_contents`` is writable, unaudited."""
    label, copy, flags = entry[0], entry[2], entry[3]
    cells = []
    if flags & HOT:
        for key, value in copy.items():
            for cell in (value.__closure__ or ()) if type(value) is types.FunctionType else ():
                try:
                    cells.append((f"{label}.{key} (closure)", cell, cell.cell_contents, bool(flags & TIMING),
                                  bool(flags & HOT_CELLS)))
                except ValueError:  # an empty cell
                    pass
    entry[6] = cells


def _state_probes() -> list[Probe]:
    """Process state that decides what runs, read through C functions bound now."""
    import _signal
    import threading

    import torch

    probes: list[Probe] = [
        ("sys.settrace", sys.gettrace, (), sys.gettrace(), False),  # setting them is audited; a request
        ("sys.setprofile", sys.getprofile, (), sys.getprofile(), False),  # profiler may hold one meanwhile
        ("threading.settrace", vars(threading).get, ("_trace_hook",), vars(threading).get("_trace_hook"), False),
        ("threading.setprofile", vars(threading).get, ("_profile_hook",), vars(threading).get("_profile_hook"), False),
    ]
    for label, fn in (("the torch dispatch mode stack", getattr(torch._C, "_len_torch_dispatch_stack", None)),
                      ("the torch function mode stack", getattr(torch._C, "_len_torch_function_stack", None))):
        if fn is not None:  # absent in other torch versions: that probe is skipped
            probes.append((label, fn, (), fn(), True))
    # The Python dispatcher left on after a call routes every operator the harness runs (the copy of
    # an output is ``aten::clone``) through Python kernels a candidate can register on the library's
    # own operators (``torch.ops.aten.clone.default.py_impl(...)``). On while torch.compile traces,
    # off whenever a call has returned.
    included = getattr(torch._C, "_dispatch_tls_is_dispatch_key_included", None)
    key = getattr(getattr(torch._C, "DispatchKey", None), "PythonDispatcher", None)
    if included is not None and key is not None:
        probes.append(("the Python dispatcher", included, (key,), included(key), True))
    try:
        from torch._C._dynamo import eval_frame
    except ImportError:
        eval_frame = None
    callback = getattr(eval_frame, "get_eval_frame_callback", None)
    if callback is not None:
        probes.append(("Dynamo's frame callback", callback, (), callback(), True))
    for signum in range(1, _signal.NSIG):
        try:
            handler = _signal.getsignal(signum)
        except (ValueError, OSError):
            continue
        probes.append((f"the handler of signal {signum}", _signal.getsignal, (signum,), handler, False))
    return probes


def verifier(rec: Record, after: Callable[[], None]) -> Callable[[int], tuple[bool, str] | None]:
    """``verify(level)``: None if everything recorded is as it was, else (timing?, what changed).
    ``after`` runs after every full check that found nothing.

    Built with private globals (``concealment.sealed``): it runs in a process whose modules the
    candidate may have rebound, and calls nothing but builtins and C functions bound here. Version
    tags are read through ``_SimpleCData.value``'s own descriptor (``ctypes.c_uint64`` is a Python
    class whose attributes could be rebound), all at once with ``map``: ~0.06 µs a namespace."""
    import operator

    read_tag = vars(ctypes._SimpleCData)["value"].__get__
    tools = (read_tag, operator.itemgetter, operator.attrgetter("cell_contents"), operator.is_)
    return sealed(_make_verify)(rec.entries, rec.probes, rec.lists, after, rec.tags, tools, _BUILTIN_NAMES,
                                _DESCRIPTORS, (sys.modules, rec.bound))


def _make_verify(entries, probes, lists, after, tags, tools, builtin_names, descriptors, bound):  # noqa: C901 - sealed like the guard's policy: no patchable helpers
    read_tag, itemgetter, contents_of, is_ = tools
    modules, (all_names, all_modules, hot_names, hot_modules) = bound
    modules_get = modules.get
    missing = object()
    closed, timing, hot, whole = 1, 2, 4, 8
    hot_index = [i for i, e in enumerate(entries) if e[3] & hot]
    pick_hot = itemgetter(*hot_index) if len(hot_index) > 1 else (lambda seq: (seq[hot_index[0]],))
    tag_views = [e[4] for e in entries]
    hot_views = [entries[i][4] for i in hot_index]
    seen = [e[5] for e in entries]
    cells = [c for e in entries for c in e[6]]
    hot_cells = [c for c in cells if c[4]]
    cell_sets = {False: (cells, [c[1] for c in cells], tuple(c[2] for c in cells)),
                 True: (hot_cells, [c[1] for c in hot_cells], tuple(c[2] for c in hot_cells))}
    block = 64
    hot_probes = [p for p in probes if p[4]]

    def code_like(value):
        return callable(value) or issubclass(type(value), descriptors)

    def compare(entry):
        label, d, copy, flags = entry[0], entry[1], entry[2], entry[3]
        for key, value in copy.items():
            now = d.get(key, missing)
            if now is not value and (flags & whole or code_like(value)):
                return label + ": " + key + (" was removed" if now is missing else " was rebound")
        for key in d:
            if key in copy or key == "__warningregistry__":  # warnings' bookkeeping, in the caller's globals
                continue
            dunder = key[:2] == "__" and key[-2:] == "__"
            if flags & whole or key in builtin_names or (flags & closed or dunder) and code_like(d.get(key)):
                return label + ": " + key + " was added"
        return None

    def changed_namespace(hot_only):
        """The first namespace rebound since it was last accepted; data changes are accepted."""
        if not tags:  # no version tags: compare the hot namespaces entry by entry
            for i in hot_index:
                what = compare(entries[i])
                if what is not None:
                    return bool(entries[i][3] & timing), what
            return None
        if hot_only:
            now = tuple(map(read_tag, hot_views))
            if now == pick_hot(seen):
                return None
            moved = [i for i, tag in zip(hot_index, now) if tag != seen[i]]
        else:
            now = list(map(read_tag, tag_views))
            if now == seen:
                return None
            moved = [i for a in range(0, len(now), block) if now[a:a + block] != seen[a:a + block]
                     for i in range(a, min(a + block, len(now))) if now[i] != seen[i]]
        for i in moved:
            entry = entries[i]
            what = compare(entry)
            if what is not None:
                return bool(entry[3] & timing), what
            entry[2] = dict(entry[1])
            seen[i] = read_tag(entry[4])
        return None

    def verify(level=2):
        """level 0: after a call (hot namespaces, cells and state); 1: while the candidate runs (every
        namespace and cell: its own calls may hold the mode stacks); 2: between requests (all)."""
        hot_only = level == 0
        failure = changed_namespace(hot_only)
        if failure is not None:
            return failure
        chosen, cell_objects, cell_contents = cell_sets[hot_only]
        try:
            now = tuple(map(contents_of, cell_objects))
        except ValueError:  # a cell was emptied
            now = ()
        if len(now) != len(cell_contents) or not all(map(is_, now, cell_contents)):
            for i, (label, _cell, contents, is_timing, _) in enumerate(chosen):
                if i >= len(now) or now[i] is not contents:
                    return is_timing, label + " was rebound"
        if level == 1:
            return None
        names, bound_to = (hot_names, hot_modules) if hot_only else (all_names, all_modules)
        now = tuple(map(modules_get, names))
        if not all(map(is_, now, bound_to)):
            for name, module, was in zip(names, now, bound_to):
                if module is not None and module is not was:
                    return False, "sys.modules[" + repr(name) + "] was replaced"
        for label, fn, args, expected, _is_hot in (hot_probes if hot_only else probes):
            if fn(*args) is not expected:
                return False, label + " was changed"
        if not hot_only:
            for label, lst, items in lists:
                if len(lst) != len(items) or not all(map(is_, lst, items)):
                    return False, label + " was changed"
            after()
        return None

    return verify
