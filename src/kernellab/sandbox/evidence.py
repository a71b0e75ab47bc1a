"""Evidence of what a candidate actually ran, collected in the child and judged by the judge.

On a GPU: the kernels of a CUPTI trace with their streams. The launch stream is identified by a
marker kernel the harness issues on it inside the trace, because CUPTI numbers streams its own way.
On the CPU (Triton interpreter): the Triton functions the interpreter launched in each call, with
the file their code comes from (``LaunchLog``), and a dispatch-level log of aten ops (``OpLog``).
The interpreter's own launcher issues aten ops (copying arguments to and from the host), which must
not be charged to the candidate; an op issued while a launch runs is the interpreter's only if the
Python code that issued it is Triton's own, loaded before the candidate's module ran. Anything else
inside a launch (a ``@triton.jit`` body calling torch on host tensors, a pre-run hook) is the
candidate's, and reported apart: no GPU build could compile it. The op log also records tensors
handed to host code (``.numpy()``, ``__array__``, ``.tolist()``, DLPack, storages), the CPU's
counterpart of a device-to-host copy.

The op log is a dispatch mode: torch reaches it through the Python dispatch key, which code in the
call can exclude for its thread (``_ExcludeDispatchKeyGuard``) or skip (``no_dispatch``). Below it,
the profiler's ``RecordFunction`` sees every aten op whatever the keys (``_AllOps``): an op it saw that
the mode never did (composite ops looked through, their parts are what the mode sees) ran hidden.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import tempfile
import types
from types import SimpleNamespace
from typing import Any

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

MARKER_NUMEL = 7919  # a prime, so the marker fill is recognisable by its size in the trace

# Poison patterns: NaNs with a payload no arithmetic produces, so "this output element was never
# written" is recognisable bit for bit.
POISON = {torch.float32: 0x7FC0DEAD, torch.float16: 0x7E5A, torch.bfloat16: 0x7FDA, torch.float64: 0x7FF8DEADBEEFDEAD}
_INT_OF_WIDTH = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}
_EMPTY_OPS = {"aten.empty.memory_format", "aten.empty_like.default", "aten.empty_strided.default",
              "aten.new_empty.default", "aten.new_empty_strided.default"}


def as_bits(t: torch.Tensor) -> torch.Tensor:
    """A contiguous tensor viewed as integers of the same width: compares bit patterns, NaNs included."""
    return t.contiguous().view(_INT_OF_WIDTH[t.element_size()])


def _signed_pattern(dtype: torch.dtype) -> int:
    bits = 8 * torch.empty(0, dtype=dtype).element_size()
    pattern = POISON[dtype]
    return pattern - (1 << bits) if pattern >= 1 << (bits - 1) else pattern


def poison_fill(t: torch.Tensor) -> None:
    """Overwrite a fresh floating tensor with its dtype's poison pattern."""
    if t.dtype not in POISON or t.numel() == 0 or not t.is_contiguous():
        return
    with torch.no_grad():
        as_bits(t).fill_(_signed_pattern(t.dtype))


def has_poison(t: torch.Tensor) -> bool:
    """Whether any element of ``t`` still holds the poison pattern: memory the candidate never wrote."""
    if t.dtype not in POISON or t.numel() == 0:
        return False
    return bool((as_bits(t) == _signed_pattern(t.dtype)).any())


class InterpreterLaunches(types.SimpleNamespace):
    """Counts interpreter grid launches by kernel name (``names``); ``depth`` > 0 while one is executing.

    No method of its own: an instance sits in the launcher wrapper's closure, where the candidate
    can reach it, and a method's ``__globals__`` would lead from there into this module."""


def track_interpreter_launches() -> InterpreterLaunches | None:
    """Wrap the interpreter's launcher so that launches are counted.

    The wrapper is what the candidate finds in Triton's place (``GridExecutor.__call__``): it is
    built ``detached``, so its globals hold nothing of this module (its cells hold the count and
    Triton's original launcher)."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return None
    from kernellab.sandbox.concealment import detached

    state = InterpreterLaunches(names=set(), depth=0)
    interpreter.GridExecutor.__call__ = detached(_counting(interpreter.GridExecutor.__call__, state))
    return state


def _counting(original, state):
    def traced_call(self, *args, **kwargs):
        state.names.add(getattr(self.fn, "__name__", "?"))
        state.depth += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            state.depth -= 1

    return traced_call


class OpLog(TorchDispatchMode):
    """Aten ops the candidate issued; ops inside interpreted kernel launches are kept apart.

    ``ops``: ops issued outside launches. ``ops_in_kernels``: ops issued inside a launch by code that
    is not Triton's (a jit body or hook doing host work). ``hand_outs``: (what, bytes) for each tensor
    handed to host code. It also poisons every fresh ``torch.empty*`` the candidate allocates: on the
    CPU, malloc hands back freed blocks too unpredictably for the GPU's poison-and-free trick to
    work, so an output the kernel never writes is made recognisable at allocation instead.
    """

    def __init__(self, launches: InterpreterLaunches | None):
        super().__init__()
        self.launches = launches
        self.ops: list[str] = []
        self.ops_in_kernels: list[str] = []
        self.hand_outs: list[tuple[str, int]] = []
        self.hidden_ops: list[str] = []  # aten ops RecordFunction saw run and this mode never did
        self.moved_bytes = 0  # read + written by torch copies and fills outside launches
        self._seen: collections.Counter[str] = collections.Counter()  # every op this mode saw, by name
        self._host_reads = _HostReads(self.hand_outs)
        self._all_ops = _AllOps()
        remember_triton_code()  # normally done before the candidate's import (record_interpreted_launches)

    def __enter__(self):
        self._seen.clear()
        self._all_ops.__enter__()
        try:
            self._host_reads.__enter__()
        except BaseException:
            self._all_ops.__exit__(None, None, None)
            raise
        try:
            return super().__enter__()
        except BaseException:
            self._host_reads.__exit__(None, None, None)
            self._all_ops.__exit__(None, None, None)
            raise

    def __exit__(self, *exc):
        try:
            return super().__exit__(*exc)
        finally:
            try:
                self._host_reads.__exit__(*exc)
            finally:
                self._all_ops.__exit__(None, None, None)
                self.hidden_ops += self._all_ops.unseen(self._seen)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self._seen[func._schema.name] += 1
        outside = self.launches is None or self.launches.depth == 0
        if outside:
            self.ops.append(str(func))
        elif _issuer(sys._getframe(1), through_torch=True) != "triton":
            self.ops_in_kernels.append(str(func))
        result = func(*args, **(kwargs or {}))
        if outside and str(func) in _EMPTY_OPS and isinstance(result, torch.Tensor) and result.is_floating_point():
            poison_fill(result)
        if outside:
            self.moved_bytes += _moved_bytes(str(func), args, result)
        return result


# Torch ops that move data (the CPU's stand-in for the GPU time of torch's copy and fill kernels):
# copies read and write their output's bytes, fills write them. Views and allocations move nothing.
_COPIES = frozenset({"clone", "contiguous", "_to_copy", "copy_", "_copy_from", "_copy_from_and_resize", "cat",
                     "stack", "constant_pad_nd", "repeat", "lift_fresh_copy"})
_FILLS = frozenset({"fill_", "zero_", "zeros", "ones", "full", "zeros_like", "ones_like", "full_like", "new_zeros",
                    "new_ones", "new_full"})


def _moved_bytes(op: str, args: tuple, result: Any) -> int:
    name = op.split(".")[1] if op.startswith("aten.") else ""
    if name not in _COPIES and name not in _FILLS:
        return 0
    out = args[0] if name.endswith("_") and args and isinstance(args[0], torch.Tensor) else result
    if not isinstance(out, torch.Tensor):
        return 0
    return out.numel() * out.element_size() * (2 if name in _COPIES else 1)


class _AllOps:
    """Every aten op that ran on this thread between enter and exit, as the profiler's ``RecordFunction``
    saw it (the legacy profiler: no Kineto start-up, ~0.3 ms a span): below the Python dispatch key,
    so what an excluded key or disabled modes keep from a dispatch mode. Its switches are gated
    (``concealment``): the candidate cannot stop it or turn ``RecordFunction`` off."""

    def __init__(self):
        self._profile = None
        self._failed: str | None = None

    def __enter__(self):
        from torch.autograd import profiler_legacy

        self._failed = None
        try:
            self._profile = profiler_legacy.profile()
            self._profile.__enter__()
        except RuntimeError as exc:  # another profiler holds the thread: the span cannot be seen
            self._profile, self._failed = None, f"<ops not recorded: {exc}>"
        return self

    def __exit__(self, *exc):
        if self._profile is not None:
            try:
                self._profile.__exit__(None, None, None)
            except RuntimeError as error:  # stopped under it
                self._profile, self._failed = None, f"<ops not recorded: {error}>"

    def unseen(self, seen: collections.Counter[str]) -> list[str]:
        """The aten ops recorded that ``seen`` (a dispatch mode's count by operator name) does not
        account for. An op the mode saw covers one record of its name and everything inside it (the
        mode runs the op's kernel with itself popped). An aten op with a composite overload (one that
        decomposes before the Python key: ``to``, ``softmax``, ``linear``) and any other record (an
        autograd node, a label, another namespace's op the mode did not see) stand for the records
        inside them. Any other aten op the mode did not see ran hidden from it."""
        if self._failed is not None:
            return [self._failed]
        if self._profile is None:
            return []
        left = collections.Counter(seen)
        hidden: list[str] = []

        def in_order(events):
            return sorted(events, key=lambda e: e.time_range.start, reverse=True)

        pending = in_order(e for e in self._profile.function_events if e.cpu_parent is None)
        while pending:
            event = pending.pop()
            name = event.name
            if left[name] > 0:
                left[name] -= 1
                continue
            if name.startswith("aten::") and not _composite(name[len("aten::"):]):
                hidden.append(name)
                continue
            pending += in_order(event.cpu_children)
        return hidden


_COMPOSITE: dict[str, bool] = {}


def _composite(name: str) -> bool:
    """Whether an overload of ``aten::name`` decomposes into other ops before the Python key (the
    profiler does not say which overload ran)."""
    known = _COMPOSITE.get(name)
    if known is None:
        key = torch._C.DispatchKey.CompositeImplicitAutograd
        packet = getattr(torch.ops.aten, name, None)
        known = False
        for overload in packet.overloads() if packet is not None else ():
            try:
                known = known or getattr(packet, overload).has_kernel_for_dispatch_key(key)
            except RuntimeError:  # an overload TorchScript alone knows
                pass
        _COMPOSITE[name] = known
    return known


# Tensor methods that give host code the tensor's data: numpy/__array__ share it with NumPy, DLPack
# with any library, a storage with Python indexing, tolist copies it out.
_HAND_OUTS = frozenset({"numpy", "__array__", "tolist", "__dlpack__", "untyped_storage", "storage",
                        "apply_", "map_", "map2_"})  # the last three hand each element to a Python function


class _HostReads(TorchFunctionMode):
    """Records tensors handed to host code, by bytes; the interpreter's own reads are left out."""

    def __init__(self, sink: list[tuple[str, int]]):
        super().__init__()
        self.sink = sink

    def __torch_function__(self, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        # Through torch's own frames: ``np.asarray(t)`` reaches this mode from torch's Python
        # ``Tensor.__array__`` (and ``handle_torch_function``), on behalf of whoever called NumPy.
        if name in _HAND_OUTS and args and isinstance(args[0], torch.Tensor) \
                and _issuer(sys._getframe(1), through_torch=True) == "other":
            t = args[0]
            size = t.untyped_storage().nbytes() if "storage" in name else t.numel() * t.element_size()
            self.sink.append((name, int(size)))
        return func(*args, **(kwargs or {}))


_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep
_TRITON_CODE: set[types.CodeType] = set()


def remember_triton_code() -> None:
    """Collect the code objects of every loaded ``triton`` module, before any candidate code runs.
    An op whose issuing frame runs one of them is Triton's own; the set holds the objects themselves,
    so a candidate cannot join it by naming a function or a file like Triton's."""
    if _TRITON_CODE:
        return
    seen: set[int] = set()

    def add(code: types.CodeType) -> None:
        if code not in _TRITON_CODE:
            _TRITON_CODE.add(code)
            for const in code.co_consts:
                if isinstance(const, types.CodeType):
                    add(const)

    def visit(value: Any, depth: int = 0) -> None:
        if id(value) in seen or depth > 3:
            return
        seen.add(id(value))
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        if isinstance(value, property):
            for f in (value.fget, value.fset, value.fdel):
                if f is not None:
                    visit(f, depth + 1)
            return
        code = getattr(value, "__code__", None)
        if isinstance(code, types.CodeType):
            add(code)
            wrapped = getattr(value, "__wrapped__", None)
            if wrapped is not None:
                visit(wrapped, depth + 1)
        elif isinstance(value, type) and str(getattr(value, "__module__", "")).startswith("triton"):
            for member in vars(value).values():
                visit(member, depth + 1)

    for name, module in list(sys.modules.items()):
        if module is not None and (name == "triton" or name.startswith("triton.")):
            for value in list(vars(module).values()):
                visit(value)


_HERE = __file__


def _issuer(frame: Any, through_torch: bool) -> str:
    """Whose Python code issued an op: "triton" (Triton's own code, loaded before the candidate),
    "torch", or "other". Frames of this module (the op log's own handlers) are skipped, and torch's
    own Python frames too when ``through_torch`` (an op torch issues on behalf of its caller)."""
    while frame is not None and (frame.f_code.co_filename == _HERE
                                 or through_torch and frame.f_code.co_filename.startswith(_TORCH_DIR)):
        frame = frame.f_back
    if frame is None:
        return "other"
    if frame.f_code in _TRITON_CODE:
        return "triton"
    return "torch" if frame.f_code.co_filename.startswith(_TORCH_DIR) else "other"


def new_launch_log() -> SimpleNamespace:
    """Per call, the kernels the Triton interpreter launched: [function name, file of its code, bytes
    its loads and stores moved] (``calls``; ``current``: the call being logged; ``active``: the
    launch running now).

    The judge counts a launch as the candidate's own when the code comes from the candidate's file:
    the interpreter runs the function's code (rewritten from that file's source), never a name. The
    bytes are the CPU's stand-in for the kernel's GPU time, weighed against torch's data movement;
    each load and store is counted to the file of the code that issued it, so a library's
    ``@triton.jit`` function called inside a launch of the candidate's moves its bytes under an entry
    of its own ([launched name, that file, bytes]).
    A plain namespace: the hooks installed into the interpreter hold it, so it carries no methods
    whose globals would lead from the library into the harness."""
    return SimpleNamespace(calls=[], current=None, active=None)


def start_call(log: SimpleNamespace) -> None:
    log.current = []


def end_call(log: SimpleNamespace) -> None:
    if log.current is not None:
        log.calls.append(log.current)
    log.current = None


def take_calls(log: SimpleNamespace) -> list[list[list[Any]]]:
    calls, log.calls = log.calls, []
    return calls


def record_interpreted_launches() -> SimpleNamespace | None:
    """Install a launch log (``new_launch_log``) on the interpreter's grid launches and on its loads and stores
    (before the candidate's import)."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return None
    import numpy as np

    remember_triton_code()
    log = new_launch_log()
    original = interpreter.GridExecutor.__call__
    import triton

    tensor_types = (torch.Tensor, torch.nn.Parameter)
    wrapper_type = triton.runtime.jit.TensorWrapper
    descriptor_type = getattr(interpreter, "TensorDescriptor", None)

    def logged_call(self, *args, **kwargs):
        # The interpreter copies every argument with a ``data_ptr`` to the host through the
        # argument's own methods (``untyped_storage().cpu()``), inside Triton's frames: an object of
        # the candidate's whose methods are builtins (``functools.partial(torch.clamp, ...)``) would
        # have its work taken for the interpreter's copy. Pointers are plain tensors.
        pending = [*args, *kwargs.values()]
        while pending:
            arg = pending.pop()
            if isinstance(arg, tuple):
                # The interpreter rebuilds a tuple argument by calling its type: a class of the
                # candidate's (a metaclass whose ``__call__`` is a builtin) would run from Triton's code.
                if type(arg) is not tuple:
                    raise TypeError("a Triton kernel's tuple argument must be a plain tuple, not "
                                    + type(arg).__name__)
                pending.extend(arg)
                continue
            if descriptor_type is not None and type(arg) is descriptor_type:
                pending.append(arg.base)
                continue
            if type(arg) is wrapper_type:
                arg = arg.base
            elif not hasattr(arg, "data_ptr"):
                continue
            if type(arg) not in tensor_types:
                raise TypeError("a Triton kernel's pointer argument must be a tensor, not "
                                + type(arg).__name__)
        if log.current is None:
            return original(self, *args, **kwargs)
        fn = getattr(self, "fn", None)
        code = getattr(fn, "__code__", None)
        entry = [getattr(fn, "__name__", "?"), code.co_filename if code is not None else "", 0]
        log.current.append(entry)
        outer, log.active = log.active, entry
        try:
            return original(self, *args, **kwargs)
        finally:
            log.active = outer

    from kernellab.sandbox.concealment import detached

    interpreter.GridExecutor.__call__ = detached(logged_call)  # no harness module behind it
    builder = interpreter.InterpreterBuilder
    load, store = getattr(builder, "create_masked_load", None), getattr(builder, "create_masked_store", None)
    if load is not None and store is not None:
        triton_root = os.path.dirname(triton.__file__) + os.sep

        def moved(nbytes):
            # the first frame outside Triton is the jit function's code that issued the load or store
            frame = sys._getframe(2)
            while frame is not None and frame.f_code.co_filename.startswith(triton_root):
                frame = frame.f_back
            where = frame.f_code.co_filename if frame is not None else ""
            entry = log.active
            if where != entry[1] and log.current is not None:
                for other in log.current:
                    if other[0] == entry[0] and other[1] == where:
                        entry = other
                        break
                else:
                    entry = [entry[0], where, 0]
                    log.current.append(entry)
            entry[2] += nbytes

        def counted_load(self, ptrs, mask, *args, **kwargs):
            if log.active is not None:
                moved(int(np.count_nonzero(mask.data)) * (ptrs.get_element_ty().primitive_bitwidth // 8))
            return load(self, ptrs, mask, *args, **kwargs)

        def counted_store(self, ptrs, value, mask, *args, **kwargs):
            if log.active is not None:
                moved(int(np.count_nonzero(mask.data)) * value.data.itemsize)
            return store(self, ptrs, value, mask, *args, **kwargs)

        moved = detached(moved, sys=sys)  # its other names are closures, as the two hooks' are
        builder.create_masked_load, builder.create_masked_store = detached(counted_load), detached(counted_store)
    return log


def compiled_graphs() -> int:
    """Graphs torch.compile (Dynamo) has compiled in this process: 0 unless Dynamo was ever used."""
    dynamo_utils = sys.modules.get("torch._dynamo.utils")
    counters = getattr(dynamo_utils, "counters", None)
    if counters is None:
        return 0
    try:
        return int(sum(counters["stats"].get(k, 0) for k in ("unique_graphs",)))
    except Exception:  # noqa: BLE001 - a counter layout of another torch version: no evidence
        return 0


def mark_launch_stream() -> None:
    """Issue a recognisable fill on the current stream; its trace record names the launch stream."""
    torch.empty(MARKER_NUMEL, dtype=torch.float32, device="cuda").fill_(1.0)


END_MARKER = "FillFunctor<short>"  # the name of mark_call_end's kernel in a trace


def mark_call_end() -> None:
    """Issue a fill of 16-bit integers where the candidate's part of a call ends. What the trace holds
    after the last one is the harness's own work (copying outputs and gradients to send them): the
    judge leaves that data movement out of the candidate's share, and still charges any compute."""
    torch.empty(MARKER_NUMEL, dtype=torch.int16, device="cuda").fill_(1)


class CallSpan:
    """The context a GPU call's forward and backward run in while it is traced: each exit marks
    where the candidate's work ended (the harness copies outputs and gradients after the last)."""

    def __enter__(self) -> CallSpan:
        return self

    def __exit__(self, *exc: Any) -> bool:
        mark_call_end()
        return False


def kernel_records(prof: Any) -> list[dict[str, Any]]:
    """GPU activity of a finished ``torch.profiler.profile``: name, stream, µs, start, and for memory
    copies the bytes moved (``None`` for kernels)."""
    records = []
    for event in prof.profiler.kineto_results.events():
        if event.device_type() != torch.autograd.DeviceType.CUDA:
            continue
        name = event.name()
        records.append({"name": name, "stream": int(event.device_resource_id()),
                        "duration_us": event.duration_ns() / 1000.0, "start_ns": int(event.start_ns()),
                        "bytes": None})
    records.sort(key=lambda r: r["start_ns"])
    if any(r["name"].startswith(_TO_HOST) for r in records):
        _add_copy_bytes(prof, records)
    return records  # records[0] is the marker of mark_launch_stream()


_TO_HOST = "Memcpy DtoH"


def _add_copy_bytes(prof: Any, records: list[dict[str, Any]]) -> None:
    """Bytes of each device-to-host copy. Kineto's events carry no byte counts in Python, its Chrome
    trace does (``args.bytes``); it is written only for traces that hold such a copy."""
    handle, path = tempfile.mkstemp(suffix=".json")
    os.close(handle)
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f).get("traceEvents", [])
    except (OSError, ValueError, RuntimeError):
        return
    finally:
        try:
            os.unlink(path)
        except OSError:
            pass
    sizes = [int(e.get("args", {}).get("bytes", 0)) for e in sorted(
        (e for e in events if str(e.get("name", "")).startswith(_TO_HOST) and e.get("ph") == "X"),
        key=lambda e: float(e.get("ts", 0)))]
    copies = [r for r in records if r["name"].startswith(_TO_HOST)]
    if len(sizes) == len(copies):
        for record, size in zip(copies, sizes):
            record["bytes"] = size
