"""Compile ahead: helper children of the same candidate build its Triton kernels while it is checked.

A Triton kernel is compiled on its first call for each specialisation (dtypes, constexpr block sizes,
divisibility of sizes), so a candidate evaluated on 3 seen configs × 3 dtypes, edge configs, backward
and 6 holdout configs compiles tens of kernels, one after the other, each in the middle of a check:
most of a cold evaluation. Helpers are extra children of the fork server for the same candidate,
sharing its Triton cache folder. Each calls the candidate once per (config, dtype, phase) the
evaluation will reach, on inputs it draws itself from the reference's ``get_inputs``; when the
checking child gets there, the kernel is loaded from the cache instead of compiled.

What a helper does is never judged and never sees the judge's data: its outputs are dropped, its
failures only cost their own compile. Helpers see the configs the evaluation runs anyway (holdouts
only when the holdout stage runs) and have folders of their own (HOME, TMPDIR). They are paused
(SIGSTOP) while anything is timed, so a timing has the GPU to itself, and killed when the
evaluation ends. They run only on a GPU of its own (``gpu_sharing.shared_by() == 1``: campaign
workers sharing a GPU keep its memory for themselves), for candidates with Triton kernels.

They are the candidate's code in a second process while the checks run: a candidate built to talk
to its helper (over a socket it opens itself) could move checked work out of the process the
profiler traces. The static scan still reads its source; ``--compile-ahead 0`` audits without them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import Iterator
from typing import Any

from kernellab.evaluate import gpu_sharing
from kernellab.evaluate.options import Resolved
from kernellab.evaluate.verdict import Stage
from kernellab.sandbox.candidate import CandidateError, CandidateProcess, ChildFailure, ChildSpec
from kernellab.sandbox.processes import kill_descendants
from kernellab.sandbox.requests import ImportRequest, WarmRequest
from kernellab.tasks.materialize import reference_file
from kernellab.tasks.model import Config, Task, Visibility

log = logging.getLogger(__name__)

MAX_HELPERS = 6
CORES_PER_HELPER = 2  # one compiling core each; the judge, the checking child and the fork server keep theirs
# The checks that run between the load stage and the timing: what the helpers' compiles overlap with.
CHECKS_BEFORE_TIMING = (Stage.SHAPE_SWEEP, Stage.STABILITY, Stage.DETERMINISM, Stage.EDGE, Stage.BACKWARD)
WARM_SEED = 7  # any seed: the helpers' inputs only have to have the right shapes and value ranges


def helper_count(session, scan) -> int:
    """How many helpers this evaluation gets: ``EvalOptions.compile_ahead``, or by default up to
    ``MAX_HELPERS`` for a Triton candidate on a GPU of its own and a machine with cores to spare."""
    chosen = session.options.compile_ahead
    if session.device != "cuda" or scan is None or scan.language != "triton":
        return 0
    if chosen is not None:
        return max(0, int(chosen))
    if gpu_sharing.shared_by() > 1:
        return 0
    if not any(session.resolved.wants(stage) for stage in CHECKS_BEFORE_TIMING):
        # nothing to compile beside: helpers would still be starting (a CUDA context each, which
        # slows the checking child's own start) when the timing pauses them
        return 0
    return min(MAX_HELPERS, (os.cpu_count() or 1) // CORES_PER_HELPER)


def warm_items(task: Task, resolved: Resolved, loaded: tuple[Config, str]) -> list[dict[str, Any]]:
    """What the evaluation will call, in the order it gets there, without what its load stage calls."""
    wanted: list[tuple[Config, bool]] = []
    seen = task.configs_of(Visibility.SEEN)
    if resolved.wants(Stage.SHAPE_SWEEP) or resolved.wants(Stage.TIMING):
        wanted += [(c, False) for c in seen]
    if resolved.wants(Stage.EDGE):
        wanted += [(c, False) for c in task.configs_of(Visibility.EDGE)]
    if task.backward and (resolved.wants(Stage.BACKWARD) or resolved.wants(Stage.TIMING)):
        wanted += [(c, True) for c in seen or task.configs_of(Visibility.SMALL)]
    if resolved.wants(Stage.HOLDOUT) and resolved.options.configs != "seen":
        wanted += [(c, False) for c in task.configs_of(Visibility.HOLDOUT)]
    items, done = [], {(loaded[0], loaded[1], False)}
    for config, backward in wanted:
        for dtype in resolved.dtypes:
            if (config, dtype, backward) in done:
                continue
            done.add((config, dtype, backward))
            items.append({"label": config.label, "values": config.as_dict(), "dtype": dtype,
                          "keep_dtype": list(task.keep_dtype),
                          "grad_inputs": list(task.grad_inputs) if backward else None})
    return items


class CompileAhead:
    """The helpers of one evaluation, each started in a thread of the judge (a child's start is its
    CUDA context, most of a second, which the checks need not wait for); ``paused()`` around
    timings, ``close()`` at the evaluation's end."""

    def __init__(self, ctx, spec: ChildSpec, count: int, items: list[dict[str, Any]]):
        self.helpers: list[CandidateProcess] = []
        self.submitted: dict[int, float] = {}  # helper pid -> when its warm request was sent
        self.items = len(items)
        self._lock = threading.Lock()
        self._stopping = self._paused = False  # both read and set under ``_lock``
        self._starters = [threading.Thread(target=self._start, args=(ctx, spec, i, items[i::count]),
                                           name=f"compile-ahead-{i}", daemon=True) for i in range(count)]
        for starter in self._starters:
            starter.start()

    @classmethod
    def start(cls, ctx, spec: ChildSpec, loaded: tuple[Config, str]) -> CompileAhead | None:
        """Helpers for ``ctx``'s candidate (``spec``: its checking child's, whose Triton cache they
        share), each with its share of the work, round-robin; None when there are none. ``loaded``:
        the config and dtype the load stage calls."""
        count = helper_count(ctx.session, ctx.scan)
        items = warm_items(ctx.session.task, ctx.session.resolved, loaded) if count else []
        count = min(count, len(items))
        return cls(ctx, spec, count, items) if count else None

    def _start(self, ctx, spec: ChildSpec, i: int, items: list[dict[str, Any]]) -> None:
        session = ctx.session
        # A folder of its own (HOME, TMPDIR), only the Triton cache shared with the checking child.
        home = spec.log_path.parent / f"compile-ahead-{i}"
        home.mkdir(exist_ok=True)
        own = ChildSpec(device=spec.device, interpret=spec.interpret,
                        env=dict(spec.env, HOME=str(home), TMPDIR=str(home)),
                        log_path=spec.log_path.with_name(f"compile-ahead-{i}.log"),
                        memory_fraction=spec.memory_fraction, fp32_precision=spec.fp32_precision)
        try:
            helper = CandidateProcess(session.server(), own)
        except Exception as exc:  # noqa: BLE001 - no helper is no loss: the checks compile themselves
            log.info("compile-ahead helper %d did not start: %s", i, exc)
            return
        with self._lock:
            self.helpers.append(helper)
            if self._stopping:
                helper.kill()
                return
            if self._paused:
                helper.send_signal(signal.SIGSTOP)
        try:
            helper.ask(ImportRequest(str(ctx.path), ctx.is_own_reference),
                       max(session.options.compile_timeout_s, ctx.timeout))
            self.submitted[helper.pid] = helper.send(WarmRequest(session.task.source, str(reference_file(session.task)),
                                                                 WARM_SEED, items))
        except (CandidateError, ChildFailure) as exc:  # killed at the end, or the checks will say why
            log.info("compile-ahead helper %d: %s", i, exc)

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Stop the helpers while the body runs (a timing must have the GPU to itself); one that
        comes up meanwhile is stopped as it comes."""
        with self._lock:
            self._paused = True
            for helper in self.helpers:
                # A process a helper started (in a session of its own, out of its group's reach) has
                # no business running beside a timing: killed, as the checking child's would be.
                kill_descendants(helper.pid)
                helper.send_signal(signal.SIGSTOP)
        try:
            yield
        finally:
            with self._lock:
                self._paused = False
                for helper in self.helpers:
                    helper.send_signal(signal.SIGCONT)

    def close(self) -> str | None:
        """Kill the helpers; a note on what they did, for the verdict."""
        warmed = failed = finished = 0
        compile_s = 0.0
        with self._lock:
            self._stopping = True
            helpers = list(self.helpers)
        for helper in helpers:
            try:
                if helper.pid in self.submitted and helper.answered():
                    answer = helper.collect("warm", self.submitted[helper.pid], 1.0)
                    warmed += int(answer.get("warmed", 0))
                    failed += len(answer.get("failed", []))
                    finished += 1
            except (CandidateError, ChildFailure) as exc:
                log.info("compile-ahead helper: %s", exc)
            compile_s += helper.compile_seconds
            helper.send_signal(signal.SIGKILL)  # a request its starter still waits on ends with it
        for starter in self._starters:
            starter.join()  # a helper still starting kills itself when it is up (``_stopping``)
        for helper in helpers:
            helper.kill()
        if not helpers:
            return None
        if not finished:
            return f"compile ahead: {len(helpers)} helper process(es), ended before they had finished"
        return (f"compile ahead: {len(helpers)} helper process(es) called the candidate on {warmed} of "
                f"{self.items} shapes beforehand ({failed} failed there), with {compile_s:.1f} s of compiles "
                f"beside the checks (not in compile_seconds)")
