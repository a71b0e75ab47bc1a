"""The candidate child: runs one candidate's code and sends back raw data, never judgements.

Everything here runs in the same process as untrusted code, so nothing here decides anything:
it loads the candidate, calls it on inputs the judge owns (shared by CUDA IPC, so the judge can
rewrite them in place between calls), and returns outputs, event times and evidence (GPU trace,
op log, thread count). The judge compares, times and rules.

Functions the harness relies on are bound at import time, before any candidate code runs, so a
candidate that reassigns ``torch.cuda.Event.elapsed_time`` or ``time.perf_counter`` changes what it
sees, not what the harness measures.
"""

from __future__ import annotations

import faulthandler
import gc
import os
import resource
import sys
import tempfile
import threading
import time
import traceback
from typing import Any

import torch
from torch.profiler import ProfilerActivity, profile  # not imported per request: see integrity._bound_modules

from kernellab.sandbox import guard as sandbox_guard
from kernellab.sandbox import plain, round_clock  # bind the timers before candidate code runs
from kernellab.sandbox.confine import close_after_start, confine_writes
from kernellab.sandbox.candidate_module import load_candidate
from kernellab.sandbox.channel import Channel, ChannelClosed, ProtocolError
from kernellab.sandbox.concealment import detached
from kernellab.sandbox.evidence import (CallSpan, OpLog, compiled_graphs, end_call, kernel_records,
                                        mark_launch_stream, poison_fill, record_interpreted_launches, start_call,
                                        take_calls, track_interpreter_launches)
from kernellab.sandbox.own_compiles import mark_own_compiles
from kernellab.sandbox.plain import harness_method, plain_outputs
from kernellab.sandbox import interpreter_gap, interpreter_rounding
from kernellab.tasks.materialize import (build_model, cast_model, copy_matching_state, flatten_outputs,
                                         forward_input_names, module_init_inputs, module_inputs)
from kernellab.tasks.module import build_module

_perf_counter = time.perf_counter
_audit = sys.audit  # the guard's quick check after each candidate call (sandbox/guard.py, CALL_RETURNED)
_CALL_RETURNED = sandbox_guard.CALL_RETURNED
# Bound before any candidate code runs: a timing round turns the cyclic collector off with these.
_gc_disable, _gc_isenabled = gc.disable, gc.isenabled
_gc_get_count, _gc_get_threshold = gc.get_count, gc.get_threshold
_fstat, _write, _exit = os.fstat, os.write, os._exit
# The tensor and module methods the harness calls on what the candidate holds, taken from their
# classes before any candidate code runs. A plain tensor has an instance ``__dict__``: ``y.detach =
# f`` overrides the method for ``y.detach()`` while ``type(y)`` stays exactly ``torch.Tensor``, and
# the harness's copies of outputs (after a call's end event) or loading of inputs (before its start)
# then ran candidate code outside the events. Called through the class, an instance attribute is
# never consulted. (A ``ModelNew``'s own methods, ``named_parameters`` among them, are asked only before
# a round's first loading.)
# With ``__torch_function__`` off as well (``harness_method``): a class the candidate gave a reused
# input would otherwise be asked to run the method.
_detach, _clone = harness_method(torch._C.TensorBase.detach), harness_method(torch._C.TensorBase.clone)
_copy_into = harness_method(torch._C.TensorBase.copy_)
_set_requires_grad = harness_method(torch._C.TensorBase.requires_grad_)
_untyped_storage = harness_method(torch._C.TensorBase.untyped_storage)
_storage_ptr = torch.UntypedStorage.data_ptr
_named_parameters = torch.nn.Module.named_parameters


def _copy_of(t: torch.Tensor) -> torch.Tensor:
    return _clone(_detach(t))


def _copy_grad(g: Any) -> Any:
    return _copy_of(g) if isinstance(g, torch.Tensor) else g


_synchronize = torch.cuda.synchronize
_thread_count = threading.active_count


class Received:
    """What the judge sent to this process, by storage: memory the child must never send back.

    torch cannot send a CUDA tensor received from another process ("Attempted to send CUDA tensor
    received from another process"): a gradient that *is* the judge's ``grad_output`` (``a + b``
    passes it through unchanged), or a result that aliases an input, has to be copied before it is
    sent; the child copies every output and gradient it sends (``_copy_of``). The registry holds
    weak references, so it never keeps the judge's memory mapped.

    ``keep`` holds received CUDA storages strongly until ``release``: the next message that names
    the same judge memory (the timing request after the checks of its input sets, the repeated
    calls of the determinism stage, the same inputs sent again) then finds it already mapped in
    torch's IPC cache instead of opening and closing a CUDA IPC mapping per request. The harness
    releases them when the judge moves to another config or dtype, so at most one config's input
    sets stay mapped (the judge's LRU may free a case the child still maps; its memory is then
    returned when the child lets go).
    """

    def __init__(self) -> None:
        from torch.multiprocessing.reductions import StorageWeakRef

        self._weak = StorageWeakRef
        self.refs: dict[int, Any] = {}  # storage data_ptr -> StorageWeakRef
        self.kept: dict[int, Any] = {}  # storage data_ptr -> storage (CUDA only)

    def add(self, obj: Any, keep: bool = False) -> None:
        """Register every tensor in ``obj`` (lists, tuples and dict values are walked)."""
        if isinstance(obj, torch.Tensor):
            storage = obj.untyped_storage()
            ptr = storage.data_ptr()
            if ptr == 0 or storage.nbytes() == 0:
                return
            ref = self.refs.get(ptr)
            if ref is None or ref.expired():
                self.refs[ptr] = self._weak(storage)
            if keep and obj.is_cuda:
                self.kept[ptr] = storage
        elif isinstance(obj, (list, tuple)):
            for item in obj:
                self.add(item, keep)
        elif isinstance(obj, dict):
            for item in obj.values():
                self.add(item, keep)

    def holds(self, t: torch.Tensor) -> bool:
        ptr = _storage_ptr(_untyped_storage(t))
        if ptr == 0:
            return False
        ref = self.refs.get(ptr)
        return ref is not None and not ref.expired()

    def release(self) -> None:
        """Let the kept mappings go and forget storages that no longer exist."""
        self.kept.clear()
        self.refs = {ptr: ref for ptr, ref in self.refs.items() if not ref.expired()}



class Harness:
    def __init__(self, spec: dict[str, Any]):
        self.device = spec["device"]
        self.interpret = spec["interpret"]
        self.module = None
        self.models: dict[str, torch.nn.Module] = {}
        self.keep: list[Any] = []  # tensors the judge still reads through IPC
        self.input_slots: list[Any] = []  # the previous call's input tensors, for same-pointer calls
        self.received = Received()
        self.timer: round_clock.RoundTimer | None = None  # the timing row's clock, kept across its rounds
        self.timer_row: str | None = None
        self.live: list[dict[str, Any]] = []  # the timing row's own input copies, one set per slot
        self.base_threads = _thread_count()
        self.guard: sandbox_guard.Guard | None = None  # armed by main() once the harness exists
        self.launches = track_interpreter_launches() if self.interpret else None
        if self.interpret:
            _autotune_without_benchmarks()
            interpreter_gap.install()
            interpreter_rounding.install()
        self.compile_seconds = _track_jit_compiles()  # [seconds]: filled by the wrappers
        # Library hooks go in before the guard is armed (it then holds every library namespace to
        # what it is): the renaming of own kernels (its candidate path is set at import) and the log
        # of interpreted launches.
        mark_own_compiles("", self.interpret)
        self.launch_log = record_interpreted_launches() if self.interpret else None
        tf32 = spec.get("fp32_precision") == "tf32"
        torch.backends.cuda.matmul.allow_tf32 = tf32
        torch.backends.cudnn.allow_tf32 = tf32
        if self.device == "cuda":
            torch.cuda.init()
            torch.zeros(1, device="cuda").add_(1)  # the context and its threads, named now
            _stop_profiler(_start_profiler())  # CUPTI's threads too
            fraction = spec.get("memory_fraction")
            if fraction:
                torch.cuda.set_per_process_memory_fraction(float(fraction))

    def let_go(self) -> None:
        """Drop every reference to memory the judge sent, before exiting. torch counts a received CUDA
        block as in use until the receiving storage is freed; a process that exits holding one never
        tells the sender, which then keeps the block for the rest of its life (a campaign worker
        leaked gigabytes per evaluation this way)."""
        self.keep = []
        self.models.clear()
        self.op_release()
        self.received.refs.clear()

    # -------------------------------------------------------------------------------- operations

    def op_release(self) -> dict[str, Any]:
        """Let go of the judge's memory this child still maps (the last config's inputs, kept until
        the next config is instantiated): a judge short of device memory asks before it builds a
        case again, since what it sent cannot be freed while mapped here. A same-pointer call right
        after it gets fresh tensor objects (at the same addresses on a GPU)."""
        self.input_slots = []
        self.received.release()
        self.guard.collect()
        if self.device == "cuda":
            torch.cuda.synchronize()
        return {}

    def op_import(self, path: str, reference_class: bool = False) -> dict[str, Any]:
        """Import the candidate's file. Its class is ``ModelNew``; ``reference_class``: the file is the
        task's own reference, evaluated as its own candidate, whose class is ``Model``."""
        started = _perf_counter()
        if self.guard is not None:  # its code is the candidate's even where it lies among trusted files
            self.guard.untrust(path)
            self.guard.untrust(os.path.realpath(path))
        mark_own_compiles(path, self.interpret)  # its kernels compile under names no library kernel has
        self.module, self.model_cls = load_candidate(path, f"kernellab_candidate_{os.getpid()}", reference_class)
        return {"seconds": _perf_counter() - started}

    def op_instantiate(self, key: str, init_inputs: list[Any], seed: int, state: dict[str, torch.Tensor],
                       dtype: str, keep_dtype: list[str]) -> dict[str, Any]:
        # Constructed on the CPU under the same seed as the reference: identical seeding.
        model = cast_model(build_model(self.model_cls, init_inputs, seed), dtype, keep_dtype, self.device)
        copied = copy_matching_state(state, model)
        self.received.release()  # another config or dtype: its inputs are other memory of the judge
        self.received.add((init_inputs, state))
        self.models.clear()  # one live model at a time keeps GPU memory bounded
        self.models[key] = model
        # On the CPU the judge's tensors arrived by value: what this process holds after instantiating
        # goes back, so the judge can see a write into them (on the GPU it reads its own memory).
        return {"copied": copied, "received_after": {"init_inputs": init_inputs, "state": state}
                if self.device == "cpu" else None}

    def op_warm(self, source: str, where: str, seed: int, items: list[dict[str, Any]]) -> dict[str, Any]:
        """Compile ahead: call the candidate once on each item's shapes, on inputs this process draws
        itself from the reference's ``get_inputs`` (never the judge's), so that the Triton kernels the
        evaluation will need are in the candidate's cache before its checking child asks for them.

        An item is ``{"label", "values" (the config's constants), "dtype", "keep_dtype",
        "grad_inputs" (None: forward only)}``. Nothing here is judged: outputs are dropped, and an
        item that fails only costs its own compile."""
        warmed, failed = 0, []
        for item in items:
            try:
                self._warm_one(source, where, seed, item)
                warmed += 1
            except BaseException as exc:  # noqa: BLE001 - candidate code may raise anything
                failed.append(f"{item['label']} {item['dtype']}: {_describe(exc)[:200]}")
            finally:
                self.guard.collect()
                if self.device == "cuda":
                    torch.cuda.empty_cache()  # the judge and the checking child share this GPU
        return {"warmed": warmed, "failed": failed}

    def _warm_one(self, source: str, where: str, seed: int, item: dict[str, Any]) -> None:
        module = build_module(source, item["values"], name="reference", where=where)
        dtype, keep = item["dtype"], item["keep_dtype"]
        model = cast_model(build_model(self.model_cls, module_init_inputs(module), seed), dtype, keep, self.device)
        inputs = module_inputs(module, seed, self.device, dtype, keep)
        grad_inputs = item.get("grad_inputs")
        if grad_inputs is None:
            with torch.no_grad():
                model(*inputs)
        else:
            wrt = [x for x, name in zip(inputs, forward_input_names(module)) if name in grad_inputs
                   and isinstance(x, torch.Tensor) and x.is_floating_point()]
            for x in wrt:
                _set_requires_grad(x, True)
            outputs = [t for t in flatten_outputs(model(*inputs)) if isinstance(t, torch.Tensor) and t.requires_grad]
            params = [p for _, p in _grad_params(model)]
            if outputs and wrt + params:
                torch.autograd.grad(outputs, wrt + params, [torch.randn_like(t) for t in outputs],
                                    allow_unused=True)
        if self.device == "cuda":
            _synchronize()

    def op_run(self, key: str, calls: list[dict[str, Any]], poison_bytes: list[int],
               profile: bool) -> dict[str, Any]:
        """Call the model once per entry; each entry: inputs, and for backward grad_outputs + wrt."""
        model = self.models[key]
        self.keep = []
        self.received.add([(call["inputs"], call.get("grad_outputs")) for call in calls], keep=True)
        if self.device == "cuda":
            # Outputs the judge has finished reading wait in torch's IPC limbo until collected; until
            # then their blocks cannot be reused and each call allocates anew.
            torch.cuda.ipc_collect()
        results = []
        oplog = OpLog(self.launches) if self.device == "cpu" else None
        launch_log = getattr(self, "launch_log", None)
        if launch_log is not None:
            take_calls(launch_log)  # nothing left over from a request that raised
        traced = profile and self.device == "cuda"
        # Traced on a GPU, the call runs in a CallSpan (passed where the CPU's op log goes): it marks
        # where the candidate's work ends. The profiler starts after the first call's poisoning.
        context = oplog if oplog is not None else (CallSpan() if traced else None)
        profiler = None
        try:
            for call in calls:
                self._poison(poison_bytes)
                if traced and profiler is None:
                    profiler = _start_profiler()
                if launch_log is not None:
                    start_call(launch_log)
                try:
                    results.append(self._one_call(model, call, context))
                finally:
                    if launch_log is not None:
                        end_call(launch_log)
        finally:
            trace = _stop_profiler(profiler) if profiler is not None else None
        own_ran = sorted(self.launches.names) if self.launches else None
        # Raw evidence for the judge: per call, the interpreter's launches (name, file of the code,
        # bytes loaded and stored); ops issued inside launches by code that is not Triton's; tensors
        # handed to host code; bytes torch's copies moved; Dynamo graphs compiled in this process.
        return {"results": results, "ops": oplog.ops if oplog else None, "trace": trace,
                "threads": _thread_count() - self.base_threads, "interpreted_kernels": own_ran,
                "launches": take_calls(launch_log) if launch_log is not None else None,
                "ops_in_kernels": oplog.ops_in_kernels if oplog else None,
                "hand_outs": oplog.hand_outs if oplog else None, "moved_bytes": oplog.moved_bytes if oplog else None,
                "hidden_ops": oplog.hidden_ops if oplog else None, "compiled_graphs": compiled_graphs()}

    def op_time_round(self, key: str, row: str, slots: list[dict[str, Any]], method: str,
                      backward: dict[str, Any] | None, mutated: list[int], warm_ms: float = 0.0,
                      peak: bool = False, profile: bool = False) -> dict[str, Any]:
        """One timing round: the model called once on each slot, every call's results copied.

        ``slots``: per slot its ``inputs`` (the judge's memory, rewritten with fresh values before
        every round) and, for forward+backward rows, its ``grad_outputs``. ``backward``: ``{"wrt":
        input indices}`` or None. ``mutated``: indices of the inputs the task updates in place,
        copied after each call like outputs. The judge checks every call's copies; this process only
        measures and copies. A row's clock (spacer sizing, captured graph) is kept across its rounds.

        Run with the cyclic collector off (as every request is, ``main``), candidate code runs only
        inside its calls: the collector stays off (a call that turns it on is undone as it returns,
        before anything else), and every object a call returned lives until the round's device work
        is done (``round_clock``), so no finalizer or weakref callback of the candidate's runs in the
        harness's loading, flushing or copying, where work would be outside the events yet see the
        fresh values.
        """
        model = self.models[key]
        self.received.add([(slot["inputs"], slot.get("grad_outputs")) for slot in slots], keep=True)
        if self.timer is None or self.timer_row != row:
            self.timer, self.timer_row = round_clock.RoundTimer(device=self.device), row
            self.live = []
        wrt_idx = backward["wrt"] if backward is not None else None
        named = _grad_params(model) if wrt_idx is not None else []  # once, before any loading
        params = [p for _, p in named]
        # The calls read inputs of this process's own, into which each slot's values are copied on the
        # stream right before its call (``load``): the judge's memory holding them is never handed to
        # the candidate, and no moment before a call holds that call's values.
        while len(self.live) < len(slots):
            source = slots[len(self.live)]
            inputs = [torch.empty_like(t) if isinstance(t, torch.Tensor) else t for t in source["inputs"]]
            for j in wrt_idx or []:
                _set_requires_grad(inputs[j], True)
            grads = [torch.empty_like(g) for g in source["grad_outputs"]] if source.get("grad_outputs") else None
            self.live.append({"inputs": inputs, "grad_outputs": grads, "layouts": _layouts(inputs)})
        live = self.live

        def load(i: int) -> None:
            with torch.no_grad():
                for mine, theirs in zip(live[i]["inputs"], slots[i]["inputs"]):
                    if isinstance(mine, torch.Tensor):
                        _copy_into(mine, theirs)
                for mine, theirs in zip(live[i]["grad_outputs"] or [], slots[i].get("grad_outputs") or []):
                    _copy_into(mine, theirs)

        # Without a GPU every call of the round runs under the op log, as a checked call does: the
        # dry run's calls are policy evidence too (nothing else of a round is judged on the CPU).
        oplog = OpLog(self.launches) if self.device == "cpu" else None
        launch_log = getattr(self, "launch_log", None) if oplog is not None else None
        if launch_log is not None:
            take_calls(launch_log)
        logged = oplog if oplog is not None else _null()

        def launch(i: int) -> Any:
            args = live[i]["inputs"]
            if launch_log is not None:
                start_call(launch_log)
            try:
                with logged:
                    return _call(args, live[i]["grad_outputs"])
            finally:
                if launch_log is not None:
                    end_call(launch_log)

        def _call(args: list[Any], grad_outputs: Any) -> Any:
            if wrt_idx is None:
                with torch.no_grad():
                    out = model(*args)
                _gc_disable()
                return plain_outputs(out)
            out = model(*args)
            _gc_disable()
            flat = plain_outputs(out)
            wrt = [args[j] for j in wrt_idx] + params
            grads = torch.autograd.grad([t for t in flat if t.requires_grad], wrt, grad_outputs, allow_unused=True)
            _gc_disable()
            return flat, plain.plain_gradients(grads)

        def snapshot(i: int, out: Any) -> dict[str, Any]:
            _audit(_CALL_RETURNED)  # after the call's end event: a rebinding it left behind ends the child
            outputs, grads = (out, None) if wrt_idx is None else out
            args = live[i]["inputs"]
            _inputs_kept(args, live[i]["layouts"])
            copied = {"outputs": [_copy_of(t) for t in outputs],
                      "mutated": [_copy_of(args[j]) for j in mutated], "grads": None}
            if grads is not None:
                grads = [None if g is None else _copy_of(g) for g in grads]
                copied["grads"] = {"inputs": grads[:len(wrt_idx)],
                                   "params": {n: g for (n, _), g in zip(named, grads[len(wrt_idx):])}}
            return copied

        self.timer.warm(warm_ms)
        # Traced (CUDA): the profiler around the whole round, each call (or graph replay) between two
        # end-of-call markers, so the judge tells the calls' work from the harness's (``round_clock``).
        traced = profile and self.device == "cuda"
        profiler = None
        try:
            if traced:
                with torch.cuda.stream(self.timer.stream):
                    profiler = _start_profiler()  # its launch-stream marker on the round's stream
            if method == "graph":
                try:
                    times, snaps = self.timer.replay(launch, snapshot, len(slots), load=load, traced=traced)
                except plain.OutputContractError:
                    raise
                except Exception as exc:  # noqa: BLE001 - capture refused: the judge times with events
                    self.timer.graph = None
                    return {"capture_failed": _describe(exc)}
            else:
                times, snaps = self.timer.events(launch, snapshot, len(slots), peak=peak, load=load, traced=traced)
        finally:
            trace = _stop_profiler(profiler) if profiler is not None else None
        reply = {"times": times.to_dict(), "results": snaps, "threads": _thread_count() - self.base_threads,
                 "trace": trace}
        if oplog is not None:  # the CPU's evidence of every call, as ``op_run`` sends it
            reply.update(ops=oplog.ops, ops_in_kernels=oplog.ops_in_kernels, hand_outs=oplog.hand_outs,
                         moved_bytes=oplog.moved_bytes, hidden_ops=oplog.hidden_ops, compiled_graphs=compiled_graphs(),
                         launches=take_calls(launch_log) if launch_log is not None else None,
                         interpreted_kernels=sorted(self.launches.names) if self.launches else None)
        return reply

    # -------------------------------------------------------------------------------- internals

    def _one_call(self, model: torch.nn.Module, call: dict[str, Any], oplog: OpLog | None) -> dict[str, Any]:
        inputs = self._same_buffers(call["inputs"], call.get("same_buffers", False))
        wrt_idx = call.get("wrt")
        if wrt_idx is not None:
            for j in wrt_idx:
                _set_requires_grad(inputs[j], True)
        layouts = _layouts(inputs)
        context = oplog if oplog is not None else _null()
        with context:
            if wrt_idx is None:
                with torch.no_grad():
                    out = model(*inputs)
            else:
                out = model(*inputs)
        _gc_disable()  # a call that turned the collector on is undone before the harness goes on
        _audit(_CALL_RETURNED)
        _inputs_kept(inputs, layouts)
        flat = plain_outputs(out)  # before anything else touches them: no candidate code runs in the walk
        grads = None
        if wrt_idx is not None:
            params = [p for _, p in _grad_params(model)]
            wrt = [inputs[j] for j in wrt_idx] + params
            with context:
                got = plain.plain_gradients(torch.autograd.grad([t for t in flat if t.requires_grad], wrt,
                                                                call["grad_outputs"], allow_unused=True))
            _gc_disable()
            _audit(_CALL_RETURNED)  # the backward is the candidate's code too: checked as the forward is
            # Copies, as the outputs are: the judge sees what each gradient held when the backward
            # returned, and a gradient that is the judge's own grad_output becomes sendable.
            grads = {"inputs": [_copy_grad(g) for g in got[:len(wrt_idx)]],
                     "params": {n: _copy_grad(g) for (n, p), g in zip(_grad_params(model), got[len(wrt_idx):])}}
        if self.device == "cuda":
            _synchronize()
        types = [type(t).__module__ + "." + type(t).__qualname__ for t in flat]
        # Copies: the judge must see what the output held when the call returned, not later writes
        # (a deferred kernel, a later call of the same request). They are also what makes an output
        # that is an input, or a view of one, sendable.
        sendable = [_copy_of(t) if isinstance(t, torch.Tensor) else t for t in flat]
        self.keep.append(sendable)
        # On the CPU the judge cannot see this process's copies of the inputs: send them back so it
        # can check for mutation. On the GPU the inputs are the judge's own memory.
        after = [_detach(t) if isinstance(t, torch.Tensor) else t for t in inputs] if self.device == "cpu" else None
        return {"outputs": sendable, "types": types, "grads": grads, "inputs_after": after,
                "grad_outputs_after": call.get("grad_outputs") if after is not None else None}

    def _same_buffers(self, inputs: list[Any], same: bool) -> list[Any]:
        """For a same-pointer call, the previous call's input tensors hold the new values.

        On the CPU inputs arrive by value, in new memory, so the new values are copied into the
        previous buffers. On the GPU the judge already wrote them into the same shared memory, but
        each message makes new tensor objects: the previous objects are handed back, so a cache keyed
        by object identity or by address sees the call it would see in a timing loop."""
        if same and len(self.input_slots) == len(inputs):
            reused = []
            for new, old in zip(inputs, self.input_slots):
                if isinstance(new, torch.Tensor) and isinstance(old, torch.Tensor) and old.shape == new.shape \
                        and old.dtype == new.dtype and old.device == new.device:
                    if old.data_ptr() != new.data_ptr():
                        with torch.no_grad():
                            _copy_into(_set_requires_grad(old, False), new)
                    reused.append(old)
                else:
                    reused.append(new)
            inputs = reused
        self.input_slots = list(inputs)
        return inputs

    def _poison(self, outputs: list[tuple[int, str]]) -> None:
        """Fill blocks the size of the expected outputs with the poison pattern, then free them.

        The caching allocator hands these very blocks to the candidate's next allocations of that
        size, so an output it never writes reads back as poison instead of a stale correct result.
        """
        if self.device != "cuda":
            return
        blocks = []
        for numel, dtype in outputs:
            block = torch.empty(max(numel, 1), dtype=getattr(torch, dtype), device="cuda")
            poison_fill(block)
            blocks.append(block)
        del blocks


# Read through the class, bound now: an instance attribute of the candidate's (``t.stride = ...``)
# shadows a method looked up on the tensor, never the class's own.
_STORAGE, _OFFSET, _SIZE, _STRIDE = (torch.Tensor.untyped_storage, torch.Tensor.storage_offset, torch.Tensor.size,
                                     torch.Tensor.stride)
_DTYPE = torch._C.TensorBase.dtype.__get__


def _layout(t: Any) -> tuple | None:
    """What an input tensor is as handed to the candidate: its memory, offset, sizes, strides, dtype."""
    if not isinstance(t, torch.Tensor):
        return None
    storage = _STORAGE(t)
    return storage.data_ptr(), storage.nbytes(), _OFFSET(t), tuple(_SIZE(t)), tuple(_STRIDE(t)), _DTYPE(t)


def _layouts(inputs: list[Any]) -> list[tuple | None]:
    return [_layout(t) for t in inputs]


def _inputs_kept(inputs: list[Any], layouts: list[tuple | None]) -> None:
    """The judge reads updated inputs (and, on the GPU, the timing rounds' values) through the input
    tensors it handed over: a call that resizes one, or points it at other memory (``resize_``,
    ``set_``), would have the judge compare what it chose, or feed the next call a marker."""
    for j, (t, layout) in enumerate(zip(inputs, layouts)):
        if layout is not None and _layout(t) != layout:
            raise plain.OutputContractError(f"the call changed the size, strides or memory of input {j} "
                                            f"(an input is read, or updated in place, as it was handed over)")


# Where Triton turns a kernel into something launchable: the JIT compile itself, the C launcher it
# builds with the host compiler, and the first load of the cubin. Each child has its own Triton cache,
# so every candidate pays all three once per specialisation (on an H100: ~1 s of the last two per
# candidate went uncounted before they were listed here). Missing names (other versions) are skipped.
_COMPILE_STEPS = (("triton.runtime.jit", "JITFunction", "_do_compile"),
                  ("triton.runtime.build", None, "compile_module_from_src"),
                  ("triton.backends.nvidia.driver", None, "compile_module_from_src"),  # bound by name there
                  ("triton.compiler.compiler", "CompiledKernel", "_init_handles"))


def _timing(original, depth, total, perf_counter):
    def timed(*args, **kwargs):
        depth[0] += 1
        started = perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            depth[0] -= 1
            if depth[0] == 0:
                total[0] += perf_counter() - started

    return timed


def _track_jit_compiles() -> list[float]:
    """Time spent making Triton kernels launchable, so a verdict reports it apart from evaluation.

    Returns the one-element list the wrappers add seconds to. The wrappers are what the candidate
    finds in Triton's place (``JITFunction._do_compile``): they are built ``detached``, so their
    globals and cells hold the Triton original, counters and ``time.perf_counter``, nothing of the
    harness. A candidate that rewrites the counters only misreports its own compile time, which is
    reported apart and decides nothing."""
    import importlib

    total = [0.0]
    depth = [0]  # the steps nest (a compile builds a launcher): only the outermost one is counted
    for module_name, owner_name, attr in _COMPILE_STEPS:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        owner = getattr(module, owner_name, None) if owner_name else module
        original = getattr(owner, attr, None) if owner is not None else None
        if callable(original):
            setattr(owner, attr, detached(_timing(original, depth, total, time.perf_counter)))
    return total


def _bench_nothing(self, *args, config, **meta):
    return [0.0, 0.0, 0.0]


def _autotune_without_benchmarks() -> None:
    """Under the interpreter there is no GPU to benchmark autotune configs on: every config gets the
    same time, so the first one is used. Timings are null in interpreter mode anyway; what is checked
    there is correctness, and the candidate is not charged for a gap of the interpreter. The stand-in
    is built ``detached``: nothing of the harness is reachable from it."""
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return
    if hasattr(Autotuner, "_bench"):
        Autotuner._bench = detached(_bench_nothing)


def _grad_params(model: torch.nn.Module):
    return [(n, p) for n, p in _named_parameters(model) if p.requires_grad]


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _start_profiler():
    prof = profile(activities=[ProfilerActivity.CUDA])
    prof.__enter__()
    mark_launch_stream()
    return prof


def _stop_profiler(prof) -> list[dict[str, Any]]:
    _synchronize()
    prof.__exit__(None, None, None)
    return kernel_records(prof)


def _describe(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().splitlines()
    return text[0][:500] if text else type(exc).__name__


class _RequestProfiler:
    """cProfile over the child's requests when a folder is named (benchmarks: where a child's time goes)."""

    def __init__(self, folder: str | None) -> None:
        self.folder = folder
        self.profile = None
        if folder:
            import cProfile

            self.profile = cProfile.Profile()

    def __enter__(self):
        if self.profile is not None:
            self.profile.enable()
        return self

    def __exit__(self, *exc):
        if self.profile is not None:
            self.profile.disable()
        return False

    def write(self) -> None:
        if self.profile is None:
            return
        import io
        import pstats

        text = io.StringIO()
        stats = pstats.Stats(self.profile, stream=text)
        stats.sort_stats("cumulative").print_stats(50)
        stats.sort_stats("tottime").print_stats(25)
        with open(os.path.join(self.folder, f"child-{os.getpid()}.txt"), "w") as f:
            f.write(text.getvalue())


# The child's own folders (``EvalSession.child_env``): all it may write, besides device files.
_WRITABLE = ("HOME", "TMPDIR", "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR", "KERNELLAB_PROFILE_CHILD")


def _collect_due(guard: sandbox_guard.Guard) -> None:
    """What the collector would have done by itself since the last request, at a point the harness
    chose and as the candidate's code: the oldest generation whose count passed its threshold."""
    counts, thresholds = _gc_get_count(), _gc_get_threshold()
    if not thresholds[0]:
        return
    for generation in (2, 1, 0):
        if counts[generation] > thresholds[generation]:
            guard.collect(generation)
            return


def _descriptor(fd: int) -> tuple[int, int] | None:
    try:
        st = _fstat(fd)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def _same_channel(fd: int, identity: tuple[int, int] | None) -> None:
    """The channel's descriptor still names the socket the judge connected: a candidate that put
    another socket in its place (``dup2``) would read the judge's requests and rewrite the harness's
    answers on their way (no token needed: the harness's own answer carries it)."""
    if _descriptor(fd) != identity:
        _write(2, _CHANNEL_MOVED)
        _exit(_ESCAPE)


_ESCAPE = sandbox_guard.ESCAPE_STATUS
_CHANNEL_MOVED = (sandbox_guard.LINE_PREFIX + sandbox_guard.VIOLATION_OF_STATUS[sandbox_guard.ESCAPE_STATUS]
                  + ": the candidate re-pointed the harness's channel (its descriptor names another file)\n").encode()


def main(fd: int, spec: dict[str, Any]) -> int:
    log_fd = os.open(spec["log_path"], os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    os.close(log_fd)
    null_in = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null_in, 0)
    os.environ.clear()
    os.environ.update(spec["env"])
    # No bytecode caches: an import would write one from the candidate's call (the guard's business),
    # and the fork server's interpreter read PYTHONDONTWRITEBYTECODE before this child's env existed.
    sys.dont_write_bytecode = True
    tempfile.tempdir = None  # recomputed from this child's TMPDIR, never a folder the fork server chose
    tempfile.gettempdir()  # now, by the harness: finding it writes a probe file (no candidate on the stack)
    # Before anything starts a thread (CUDA, a pool): Landlock confines this thread and what it starts.
    writable = [spec["env"][k] for k in _WRITABLE if spec["env"].get(k)]
    unconfined = confine_writes(writable)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    faulthandler.enable(file=sys.stderr)
    # The key the harness signs its answers with lives only in the channel's hash object from here on.
    channel = Channel.from_fd(fd, signing=bytes.fromhex(spec.pop("channel_key")))
    channel_id = _descriptor(fd)
    try:
        harness = Harness(spec)
        # CUDA is up, with the threads it names by writing this process's /proc folder (its context
        # and the profiler's): from here nothing writes that folder's ``mem``, and no other process,
        # one the candidate starts included, opens this one's memory.
        unconfined = close_after_start(writable, unconfined)
        # Armed once the harness exists and before any candidate code: from here on the candidate
        # cannot reach the harness, and what it could rebind is verified around every request.
        harness.guard = sandbox_guard.arm()
    except BaseException as exc:  # noqa: BLE001
        channel.send({"ok": False, "error": _describe(exc), "harness": True})
        return 1
    check = harness.guard.check
    # The cyclic collector never runs by itself once the candidate is in: it would run the candidate's
    # finalizers wherever the harness allocates, between its answer and the next request included,
    # where a finalizer could wait on the channel and read (or peek at) the next request before the
    # harness. It runs at the start of each request instead, once the request is read (``_collect_due``).
    collecting = _gc_isenabled()
    _gc_disable()
    channel.send({"ok": True, "pid": os.getpid(), "unconfined": unconfined})
    profiler = _RequestProfiler(spec["env"].get("KERNELLAB_PROFILE_CHILD"))
    while True:
        _same_channel(fd, channel_id)
        try:
            request = channel.recv()
        except ChannelClosed:
            return 0
        except ProtocolError as exc:  # a defect of the harness, never of the candidate: say so
            _same_channel(fd, channel_id)
            channel.send({"ok": False, "error": f"harness: {exc}", "exc_type": "HarnessError"})
            continue
        # Echoed in the answer: a message the candidate writes to the channel itself lacks it.
        token = request.pop("token", None)
        op = request.pop("op")
        profiler.__enter__()  # the guard's checks and the send (CUDA IPC handles) count too
        if collecting:
            _collect_due(harness.guard)
            _gc_disable()  # a finalizer that turned it on
        check()  # nothing that ran since the last answer (a destructor, a finalizer) rebound anything
        if op == "exit":
            profiler.write()
            try:
                harness.let_go()
            except BaseException:  # noqa: BLE001 - the candidate's objects may fail on deletion
                traceback.print_exc()
            _same_channel(fd, channel_id)
            channel.send({"ok": True, "token": token})
            return 0
        started = _perf_counter()
        compiled_before = harness.compile_seconds[0]
        try:
            value = getattr(harness, f"op_{op}")(**request)
            reply = {"ok": True, "value": value}
        except BaseException as exc:  # noqa: BLE001 - candidate code may raise anything
            check()  # formatting the traceback runs library code: verified first
            traceback.print_exc()
            if harness.launches:
                harness.launches.depth = 0
            reply = {"ok": False, "error": _describe(exc), "exc_type": type(exc).__name__,
                     "traceback": traceback.format_exc()[-4000:],
                     "interpreter_gap": interpreter_gap.classify(exc) if harness.interpret else None}
        _gc_disable()  # a call of the candidate's that turned the collector on
        check()  # what the answer is built and sent with was not rebound
        reply["token"] = token
        reply["seconds"] = _perf_counter() - started
        reply["compile_s"] = harness.compile_seconds[0] - compiled_before
        _same_channel(fd, channel_id)
        try:
            channel.send(reply)
        except ChannelClosed:
            return 0
        except Exception as exc:  # noqa: BLE001 - e.g. an output that cannot be sent: say what
            _same_channel(fd, channel_id)
            channel.send({"ok": False, "error": f"the candidate's result cannot be sent: {_describe(exc)}",
                          "exc_type": type(exc).__name__, "token": token})
        profiler.__exit__(None, None, None)
