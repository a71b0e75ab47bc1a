"""Measuring how long a GPU call takes, inside the process that makes the call.

CUDA events on the launch stream around each call, an L2 flush before it (outside the events), input
sets rotated, batches with a device-side spacer so host work never leaks into the events, and CUDA
graph replay for calls under ``graph_threshold_us``. The method, stopping rule and records are in
``timing_stats``; see its docstring for why each step is there.

The timer functions are bound when this module is imported, which the candidate child does before
any candidate code runs: a candidate that reassigns ``torch.cuda.Event.elapsed_time``,
``torch.cuda.synchronize`` or ``time.perf_counter`` afterwards changes what it sees, not this clock.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from kernellab.sandbox.timing_stats import (  # noqa: F401 - re-exported for callers of the clock
    _CALIBRATION_CYCLES,
    _FALLBACK_L2_BYTES,
    _FLUSH_MIN_BYTES,
    After,
    _SPACER_MAX_US,
    EventTimes,
    METHODS,
    TimingPlan,
    batch_size,
    graph_rounds,
    should_stop,
    spacer_us,
)

log = logging.getLogger(__name__)

# The clock's primitives, bound when this module is imported (before any candidate code runs) and
# taken from torch's C types and builtins where they exist: the methods of an extension type cannot
# be rebound (``torch._C._CudaEventBase.record = ...`` raises), while ``torch.cuda.Event.record``,
# ``torch.Tensor.zero_`` or ``torch.cuda.synchronize`` are Python attributes anyone in the process
# can replace, and the Python wrappers look their internals up again on every call. The CPU build of
# torch has none of the CUDA ones; nothing here is called without a GPU.
_perf_counter = time.perf_counter
_EVENT = torch._C._CudaEventBase
_record = getattr(_EVENT, "record", None)
_event_elapsed = getattr(_EVENT, "elapsed_time", None)
_event_wait = getattr(_EVENT, "synchronize", None)
_cuda_synchronize = getattr(torch._C, "_cuda_synchronize", None)
_cuda_sleep = getattr(torch._C, "_cuda_sleep", None)
_zero = torch._C.TensorBase.zero_


def _new_event():
    """A timing event of torch's C event type (what ``torch.cuda.Event(enable_timing=True)`` makes)."""
    return _EVENT(enable_timing=True)


def _elapsed_ms(start, end) -> float:
    return _event_elapsed(start, end)


def _synchronize(device: Any = None) -> None:
    """Wait for all work on ``device`` (default: the current one)."""
    if device is None:
        _cuda_synchronize()
        return
    with torch.cuda.device(device):
        _cuda_synchronize()

# --------------------------------------------------------------------------------------------------
# CUDA side


def _require_cuda() -> None:
    if not torch.cuda.is_available():
        raise RuntimeError("timing needs a CUDA device, and none is available")


def _resolve_device(device: Any):
    _require_cuda()
    dev = torch.device("cuda") if device is None else torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"timing needs a CUDA device, not {dev}")
    if dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    return dev


class L2Flusher:
    """A buffer of twice the device's L2 cache, and at least 256 MiB; ``flush()`` writes all of it.

    Writing more than the L2 holds evicts every line the timed call could otherwise find cached
    (its own inputs from the previous call, above all). Twice the L2 would do for that; the 256 MiB
    floor is ``triton.testing.do_bench``'s buffer, which keeps power-capped kernels comparable with
    the numbers it gives (see ``timing_stats._FLUSH_MIN_BYTES``).
    """

    def __init__(self, device: Any = None) -> None:
        _require_cuda()
        self.device = _resolve_device(device)
        props = torch.cuda.get_device_properties(self.device)
        self.l2_bytes = int(getattr(props, "L2_cache_size", 0) or 0) or _FALLBACK_L2_BYTES
        self.nbytes = max(2 * self.l2_bytes, _FLUSH_MIN_BYTES)
        self.buf = torch.empty(self.nbytes // 4, dtype=torch.int32, device=self.device)

    def flush(self) -> None:
        """Write the whole buffer on the current stream (the caller keeps it outside timed events)."""
        _zero(self.buf)


_FLUSHERS: dict[int, L2Flusher] = {}


def flusher_for(device: Any = None) -> L2Flusher:
    """One flusher per device and process: the judge times many baselines and should allocate once."""
    dev = _resolve_device(device)
    if dev.index not in _FLUSHERS:
        _FLUSHERS[dev.index] = L2Flusher(dev)
    return _FLUSHERS[dev.index]


class _Spacer:
    """Keeps the stream busy while the host queues a batch, so no timed call waits for its launch.

    Without it, a call whose host side (Python, argument checks, allocation) takes longer than the
    flush before it finds the device idle: the start event is stamped, then the device waits for the
    launch, and that wait lands inside the measured time. How much depends on the host, not on the
    kernel: eager references and ``torch.compile`` guards have tens of µs of host work per call.
    nvbench holds the stream with a blocking kernel for the same reason; here a ``torch.cuda._sleep``
    sized from the host's measured queueing rate does it. Where that function is missing, batches
    run without a spacer. Host work *between* a call's device operations (a synchronising read, say)
    still counts, since the end event is queued after it.
    """

    _cycles_per_us: dict[int, float] = {}

    def __init__(self, device) -> None:
        _require_cuda()
        self.device = device
        self.sleep = _cuda_sleep
        if self.sleep is not None and device.index not in self._cycles_per_us:
            self._cycles_per_us[device.index] = self._calibrate()

    def _calibrate(self) -> float:
        _require_cuda()
        self.sleep(1000)
        start, end = _new_event(), _new_event()
        stream = torch.cuda.current_stream(self.device)
        _record(start, stream)
        self.sleep(_CALIBRATION_CYCLES)
        _record(end, stream)
        _event_wait(end)
        return _CALIBRATION_CYCLES / max(1e-3, _elapsed_ms(start, end) * 1e3)

    def hold(self, us: float) -> None:
        if self.sleep is not None and us > 0:
            self.sleep(int(min(us, _SPACER_MAX_US) * self._cycles_per_us[self.device.index]))


def _warm_up(launch: Callable[[int], Any], warmup_ms: float, flusher, device,
             first_call: bool = True) -> tuple[float, float]:
    """Run the first launch (may compile; skipped if ``first_call`` is false), then launches for
    ``warmup_ms``, and always at least one.

    Returns (device µs, host µs) per launch including the flush: the first sizes batches, the second
    the spacer. Launches go in doubling chunks, each followed by a synchronisation, so the wall
    clock that ends the warm-up measures device work, not how fast the host queues launches.
    """
    _require_cuda()
    if first_call:
        launch(0)
        _synchronize(device)
    start = _perf_counter()
    chunk, done = 1, 0
    while True:
        t0 = _perf_counter()
        for _ in range(chunk):
            if flusher is not None:
                flusher.flush()
            launch(done)
            done += 1
        t_queued = _perf_counter()
        _synchronize(device)
        t_done = _perf_counter()
        if (t_done - start) * 1e3 >= warmup_ms or chunk >= 1024:
            return (t_done - t0) * 1e6 / chunk, (t_queued - t0) * 1e6 / chunk
        chunk *= 2


def _timed_loop(launch: Callable[[int], Any], calls_per_sample: int, method: str, plan: TimingPlan,
                flusher, stream, device, after: After | None = None, warmed_ms: float = 0.0) -> EventTimes:
    """Warm up, then time ``launch(j)`` in batches until ``should_stop``; shared by both methods.

    ``warmed_ms`` is how long the same launches have just been running (a quick measurement): the
    warm-up then skips the first launch and makes up only the rest of ``plan.warmup_ms``.

    Each iteration is [spacer] flush [start] launch [end] [hook], with events between the parts so
    that each part's device time is known. Without a hook the spacer is issued once per batch, sized
    by ``spacer_us`` from the last batch's device and host times; with one (``after(j, outputs)``,
    which may synchronise, e.g. to read a fingerprint) the device drains after every call, so the
    spacer is issued before every call instead.
    """
    _require_cuda()
    device_us, host_us = _warm_up(launch, plan.warmup_ms - warmed_ms, flusher, device,
                                  first_call=warmed_ms <= 0)
    spacer = _Spacer(device)
    size = batch_size(device_us)
    events = [tuple(_new_event() for _ in range(5)) for _ in range(size)]
    samples: list[float] = []
    flushes: list[float] = []
    last: tuple[int, Any] | None = None
    wall_s = spacer_s = hook_s = 0.0
    busy_us: float | None = None  # device µs per iteration (flush and call) in the last batch
    j = 0
    begin = _perf_counter()
    while True:
        todo = min(size, plan.max_samples - len(samples))
        t0 = _perf_counter()
        for n, (held, before, start, end, done) in enumerate(events[:todo]):
            t_iter = _perf_counter()
            if after is not None or n == 0:
                _record(held, stream)
                spacer.hold(spacer_us(host_us, None, 1) if after is not None
                            else spacer_us(host_us, busy_us, todo))
            _record(before, stream)
            if flusher is not None:
                flusher.flush()
            _record(start, stream)
            out = launch(j)
            _record(end, stream)
            if after is not None:
                host_us = (_perf_counter() - t_iter) * 1e6
                after(j, out)
                _record(done, stream)
                last = (j, out)
            del out
            j += 1
        if after is None:
            host_us = (_perf_counter() - t0) * 1e6 / todo
        _synchronize(device)
        wall_s += _perf_counter() - t0
        busy_ms = 0.0
        for n, (held, before, start, end, done) in enumerate(events[:todo]):
            call_ms, flush_ms = _elapsed_ms(start, end), _elapsed_ms(before, start)
            samples.append(call_ms * 1e3 / calls_per_sample)
            busy_ms += call_ms + flush_ms
            if flusher is not None:
                flushes.append(flush_ms * 1e3)
            if after is not None or n == 0:
                spacer_s += _elapsed_ms(held, before) / 1e3
            if after is not None:
                hook_s += _elapsed_ms(end, done) / 1e3
        busy_us = busy_ms * 1e3 / todo
        reason = should_stop(samples, plan, _perf_counter() - begin)
        if reason:
            break
    hook_idle_us = _hook_idle_us(after, last, device) if after is not None else 0.0
    log.debug("%s: %d samples of %d calls, stop=%s, wall %.3fs (spacer %.3fs, hook %.3fs)", method,
              len(samples), calls_per_sample, reason, wall_s, spacer_s, hook_s)
    return EventTimes(tuple(samples), method, wall_s, float(np.median(flushes)) if flushes else 0.0,
                      calls_per_sample, reason, spacer_s, hook_s, hook_idle_us, size)


_HOOK_PROBES = 3


def _hook_idle_us(after: After, last: tuple[int, Any] | None, device) -> float:
    """Host µs of the hook on the last timed call's outputs with nothing else queued.

    The judge compares the events with the host time per call; the hook's own host work (a
    fingerprint is several small ops and a read back) is not call time and is taken out."""
    if last is None:
        return 0.0
    _synchronize(device)
    started = _perf_counter()
    for _ in range(_HOOK_PROBES):
        after(*last)
    _synchronize(device)
    return (_perf_counter() - started) * 1e6 / _HOOK_PROBES


def time_calls(call: Callable[[int], Any], n_sets: int, plan: TimingPlan, *,
               stream: Any = None, after: After | None = None, warmed_ms: float = 0.0) -> EventTimes:
    """Time ``call(i % n_sets)`` one call at a time with CUDA events on the launch stream.

    ``stream`` is the stream the call launches on (default: the current stream); the call runs with
    it made current. The L2 flush, when planned, runs before each call's start event.
    ``after(i, outputs)``, if given, is called after every timed call (not the warm-up ones) with its
    set index and what it returned, outside the timed events: the child fingerprints the outputs of
    timed calls there, so a call that behaves differently when timed is caught. It is then called
    ``_HOOK_PROBES`` more times on the last call's outputs with the device idle, to measure its own
    host cost (``EventTimes.hook_idle_us``). ``warmed_ms``: see ``_timed_loop``.
    """
    stream, device, flusher = _timing_setup(n_sets, plan, stream)
    with torch.cuda.device(device), torch.cuda.stream(stream):
        hook = None if after is None else (lambda j, out: after(j % n_sets, out))
        return _timed_loop(lambda j: call(j % n_sets), 1, "events", plan, flusher, stream, device,
                           hook, warmed_ms)


def _timing_setup(n_sets: int, plan: TimingPlan, stream: Any) -> tuple[Any, Any, L2Flusher | None]:
    """What both timing methods start from: the stream (default: the current one), its device, and
    the plan's L2 flusher."""
    if n_sets < 1:
        raise ValueError("n_sets must be at least 1")
    _require_cuda()
    stream = stream if stream is not None else torch.cuda.current_stream()
    return stream, stream.device, flusher_for(stream.device) if plan.l2_flush else None


def time_graph(call: Callable[[int], Any], n_sets: int, plan: TimingPlan, *,
               stream: Any = None, after: After | None = None) -> EventTimes:
    """Time short calls by replaying a CUDA graph of K calls over the rotating input sets.

    The graph holds ``graph_rounds`` passes over all ``n_sets`` sets (K = rounds × n_sets calls);
    each sample is one replay's event time divided by K. Within a replay there is no flush between
    calls, so **the caller must pass enough sets that together they exceed twice the L2 cache**:
    then the inputs of set i have been evicted by the other sets before call i reads them again.
    The L2 is still flushed before each replay, outside its events.

    The values ``call`` returns during capture live in the graph's memory pool and are overwritten by
    every replay; ``after(i, outputs)``, if given, is called for each of the K captured calls once
    the timing is done, so it sees what the last replay wrote. Raises whatever the capture raises
    (synchronising, host reads and allocations outside torch's allocator are not capturable);
    ``choose_and_time`` then falls back to events.
    """
    stream, device, flusher = _timing_setup(n_sets, plan, stream)
    with torch.cuda.device(device), torch.cuda.stream(stream):
        per_call_us = _eager_estimate(call, n_sets, stream, device)
        k = graph_rounds(per_call_us, n_sets) * n_sets
        graph, outputs = _capture(call, n_sets, k, stream, device)
        _synchronize(device)
        try:
            times = _timed_loop(lambda j, graph=graph: graph.replay(), k, "graph", plan, flusher, stream, device)
            if after is not None:
                for j, out in enumerate(outputs):
                    after(j % n_sets, out)
            return times
        finally:
            del graph, outputs


def _capture(call: Callable[[int], Any], n_sets: int, k: int, stream, device):
    """Capture K calls into a CUDA graph; return it with what the K calls returned.

    The process stays usable if the capture fails.
    A failed capture in torch (2.11-2.13) skips the end of capture for the device's default RNG,
    after which every ``torch.randn`` on that device raises "Offset increment outside graph capture
    encountered unexpectedly", and leaves the capture's side stream current. So the RNG state is
    cloned before and put back on failure (which also keeps the random sequence as it was), and the
    capture runs inside a stream context of our own, which restores the stream.
    """
    _require_cuda()
    generator = torch.cuda.default_generators[device.index]
    saved = generator.clone_state()
    graph = torch.cuda.CUDAGraph()
    outputs = []
    try:
        with torch.cuda.stream(stream), torch.cuda.graph(graph):
            for j in range(k):
                outputs.append(call(j % n_sets))
    except BaseException:
        generator.graphsafe_set_state(saved)
        raise
    return graph, outputs


def _eager_estimate(call: Callable[[int], Any], n_sets: int, stream, device) -> float:
    """Run every set once on a side stream (what capture needs: lazy init, workspaces, autotuning),
    then time one more pass with events; return µs per call."""
    _require_cuda()
    side = torch.cuda.Stream(device=device)
    side.wait_stream(stream)
    with torch.cuda.stream(side):
        for j in range(n_sets):
            call(j)
        start, end = _new_event(), _new_event()
        _record(start, side)
        for j in range(n_sets):
            call(j)
        _record(end, side)
    stream.wait_stream(side)
    _synchronize(device)
    return _elapsed_ms(start, end) * 1e3 / n_sets


def quick_plan(plan: TimingPlan) -> TimingPlan:
    """A short measurement that only decides between events and graph replay."""
    return replace(plan, warmup_ms=min(plan.warmup_ms, 10.0), min_samples=min(plan.min_samples, 10),
                   max_samples=min(plan.max_samples, 30), budget_s=min(plan.budget_s, 0.5))


def choose_and_time(call: Callable[[int], Any], n_sets: int, plan: TimingPlan, *,
                    stream: Any = None, method: str | None = None,
                    after: After | None = None) -> EventTimes:
    """Time with events, or by graph replay when a quick event measurement is under the threshold.

    ``method`` ("events" | "graph") skips the quick measurement: the judge passes the method its
    baseline got, so that candidate and baseline of one config are timed the same way (the two
    methods differ by a few µs of fixed per-call cost, which matters exactly near the threshold).
    A graph that cannot be captured is not an error of the call being timed (many correct kernels
    synchronise or allocate in ways capture forbids): it is logged and the call is timed with events.
    The method used is recorded in the result. ``after`` goes to the measurement that is reported
    (see ``time_calls`` and ``time_graph``), not to the quick one. When the quick measurement chose
    events, the events measurement counts it as part of its warm-up.
    """
    _require_cuda()
    if method is not None and method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, not {method!r}")
    warmed_ms = 0.0
    if method is None:
        started = _perf_counter()
        quick = time_calls(call, n_sets, quick_plan(plan), stream=stream)
        method = "graph" if float(np.median(quick.samples_us)) < plan.graph_threshold_us else "events"
        warmed_ms = (_perf_counter() - started) * 1e3
    if method == "graph":
        try:
            return time_graph(call, n_sets, plan, stream=stream, after=after)
        except Exception as exc:  # capture refused: fall back to events
            log.info("graph capture failed (%s: %s); timing with events", type(exc).__name__, exc)
            _synchronize()
            warmed_ms = 0.0
    return time_calls(call, n_sets, plan, stream=stream, after=after, warmed_ms=warmed_ms)


def peak_memory(call: Callable[..., Any], args: Sequence[Any], *, device: Any = None) -> int:
    """Bytes of CUDA memory one ``call(*args)`` holds at its peak above what was allocated before.

    Counts what goes through torch's caching allocator (torch tensors, Triton and ``load_inline``
    kernels' torch-allocated outputs and workspaces), outputs included since they are alive when the
    call returns; a raw ``cudaMalloc`` in C++ is invisible to it.
    """
    _require_cuda()
    if device is None:
        device = next((a.device for a in args if isinstance(a, torch.Tensor) and a.is_cuda), None)
    dev = _resolve_device(device)
    _synchronize(dev)
    torch.cuda.reset_peak_memory_stats(dev)
    base = torch.cuda.memory_allocated(dev)
    out = call(*args)
    _synchronize(dev)
    peak = torch.cuda.max_memory_allocated(dev) - base
    del out
    return max(0, int(peak))
