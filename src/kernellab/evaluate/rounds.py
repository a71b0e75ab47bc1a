"""Timing in rounds of fresh values, driven by the judge: the loop both the candidate and the
baselines are measured with.

The candidate is timed in rounds (``stages.performance.TimedRounds``: each round in its child,
every call checked); the baselines are timed by the judge the same way (``LocalRounds``), on the
same slots, refreshed and checked between rounds as the candidate's are. The device then has the
same pattern of work and pauses under both: a power-capped kernel's clock follows that pattern, and
a baseline timed back to back read 4-9% slower than the same kernel timed in rounds (fp16 matmuls
of 8192 x 4096 x 4096 on an H200, the reference as its own candidate).

A row: the first round brings the device's clocks up (flushes for the plan's warm-up) and measures
the first call's peak memory; unless the method is given, its per-call median picks it. A
graph-timed row gets one slot per call of a replay and a round that captures the graph; neither
is a sample. Then timed rounds until the stopping rule holds.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np

from kernellab.evaluate.timing_slots import TimingSlots
from kernellab.sandbox.plain import plain_outputs
from kernellab.sandbox.round_clock import RoundTimer, RoundTimes
from kernellab.sandbox.timing_stats import EventTimes, SampleStats, TimingPlan, should_stop, summarize

# A graph-timed row replays one call per slot; the replay should last this long (event resolution
# and the replay's own launch under 1% of it), with at most this many slots.
GRAPH_MIN_REPLAY_US = 50.0
GRAPH_MAX_SLOTS = 32
GRAPH_MIN_ROUNDS = 5  # each graph round is one sample, itself the mean of its calls
MAX_ROUNDS = 200
# The judge's own work between rounds (drawing values, float64 references, comparisons) is not in
# the budget of the timed calls; this bounds a row's whole time at this multiple of the budget.
JUDGE_BUDGET_FACTOR = 6.0
# A round's mean per call above the per-call median by more than this means work was concentrated.
CONCENTRATION_PCT = 3.0


# The device time of a traced round's calls (its kernels' durations, which the profiler's host-side
# cost per launch does not change) may exceed the timed calls' median a little (kernels of several
# streams overlapping), but not by this much: a candidate that runs its own kernels only while the
# profiler is on (``torch.autograd._profiler_enabled()`` tells it) and a library's otherwise shows
# its own kernels' time there. The event median brackets the kernels (and the gaps between them),
# so an honest candidate's kernels sum to less than it; the margin is for overlap and clock drift.
TRACED_SLOWER_FACTOR = 1.2
TRACED_SLOWER_SLACK_US = 5.0


def traced_slower(traced_us: float, median_us: float) -> bool:
    """Whether a traced round's device time per call is beyond what the timed calls explain."""
    return traced_us > TRACED_SLOWER_FACTOR * median_us + TRACED_SLOWER_SLACK_US


class Rounds:
    """One row's rounds; ``one_round`` runs a round on freshly refreshed slots (None: the row ends)."""

    def __init__(self, slots: TimingSlots, plan: TimingPlan, seed: int = 0) -> None:
        self.slots, self.plan, self.seed = slots, plan, seed
        self.failed = False  # a round found something wrong: the row ends without a time

    def one_round(self, method: str, warm_ms: float = 0.0, peak: bool = False,
                  trace: bool = False) -> RoundTimes | None:
        raise NotImplementedError

    def concentrated(self, stats: SampleStats) -> None:
        """Called when the rounds' means were taken as the samples."""

    def traced_slower(self, traced_us: float, median_us: float) -> None:
        """Called when the traced rounds' calls were far slower than the timed ones (the row ends)."""

    def traced_cost(self, times: RoundTimes) -> list[float]:
        """What a traced round's calls cost, per call, to compare with the timed median: the base
        takes its event times (the judge's own baselines are never traced)."""
        return list(times.samples_us)

    def traced_round(self, rounds: int) -> int | None:
        """Which timed round (0-based) to trace, if any, given the ``rounds`` a row takes at the least:
        its calls are checked as every round's, its times are not samples. A traced row also traces
        one round after its last sample, whenever it stops: a candidate that counts rounds and turns
        to library kernels after the drawn window (a row that keeps running, its samples spread by
        the switch) is seen there, and one that turns back before the end cannot know when the end
        comes (the judge's stopping rule)."""
        return None

    def run(self, method: str | None = None) -> tuple[EventTimes, SampleStats, int | None] | None:
        """Time the row; ``method`` forces events or graph (the baselines take the candidate's)."""
        first = self.one_round("events", warm_ms=self.plan.warmup_ms, peak=True)
        if first is None:
            return None
        chosen = method is None
        if chosen:
            method = "graph" if float(np.median(first.samples_us)) < self.plan.graph_threshold_us else "events"
        if method == "graph" and chosen:  # a given method keeps the slots the candidate was timed on
            per_call = max(float(np.median(first.samples_us)), 0.1)
            want = min(GRAPH_MAX_SLOTS, math.ceil(GRAPH_MIN_REPLAY_US / per_call))
            self.slots.add(max(0, want - len(self.slots.slots)))
        if method == "graph":
            if self.one_round("graph") is None:
                if self.failed:
                    return None
                method = "events"  # capture refused
        min_samples = min(self.plan.min_samples, GRAPH_MIN_ROUNDS) if method == "graph" else self.plan.min_samples
        plan = replace(self.plan, min_samples=min_samples, max_samples=max(min_samples, self.plan.max_samples),
                       resolution_us=self.plan.resolution_us if method == "events" else 0.0)
        rounds: list[RoundTimes] = []
        samples: list[float] = []
        device_s = 0.0
        started = time.perf_counter()
        reason = None
        trace_at = self.traced_round(min_samples if method == "graph"
                                     else math.ceil(min_samples / max(1, len(self.slots.slots))))
        index = 0
        traced_samples: list[float] = []
        while reason is None:
            traced, index = index == trace_at, index + 1
            times = self.one_round(method, trace=True) if traced else self.one_round(method)
            if times is None:
                return None
            if traced:
                traced_samples += self.traced_cost(times)
                continue
            rounds.append(times)
            samples += times.samples_us
            device_s += times.wall_s
            reason = should_stop(samples, plan, device_s)
            if reason is None and (len(rounds) >= MAX_ROUNDS
                                   or time.perf_counter() - started > JUDGE_BUDGET_FACTOR * self.plan.budget_s):
                reason = "budget"
        if trace_at is not None:
            last = self.one_round(method, trace=True)
            if last is None:
                return None  # and after its last sample: a switch after the drawn window is seen there
            traced_samples += self.traced_cost(last)
        if method == "events":
            stats, concentrated = round_statistic([r.samples_us for r in rounds], seed=self.seed)
            if concentrated:
                self.concentrated(stats)
        else:
            stats = summarize(samples, seed=self.seed)
        traced_us = float(np.median(traced_samples)) if traced_samples else None
        if traced_us is not None and traced_slower(traced_us, stats.median):
            self.traced_slower(traced_us, stats.median)
            return None
        return _aggregate(method, rounds, samples, reason, len(self.slots.slots)), stats, first.peak_mem_bytes


class LocalRounds(Rounds):
    """A baseline (eager, ``torch.compile``, the task's kernel) timed by the judge itself in rounds on
    the candidate's slots, refreshed and checked between rounds as the candidate's are."""

    def __init__(self, call: Callable[[int], Any], slots: TimingSlots, plan: TimingPlan) -> None:
        super().__init__(slots, plan)
        self.call = call
        self.timer = RoundTimer()

    def one_round(self, method: str, warm_ms: float = 0.0, peak: bool = False,
                  trace: bool = False) -> RoundTimes | None:
        self.slots.refresh()  # with the references, as before the candidate's rounds

        def launch(j: int) -> Any:
            out = self.call(j)
            return plain_outputs(out if not self.slots.backward else list(out))

        def snapshot(j: int, out: Any) -> dict[str, Any]:
            return {"outputs": [t.detach().clone() for t in out if t is not None]}

        self.timer.warm(warm_ms)
        try:
            times, copies = (self.timer.replay(launch, snapshot, len(self.slots.slots)) if method == "graph"
                             else self.timer.events(launch, snapshot, len(self.slots.slots), peak=peak))
        except Exception:  # noqa: BLE001 - a baseline graph capture refused: events, as for the candidate
            if method != "graph":
                raise
            self.timer.graph = None
            return None
        del copies
        return times


def round_statistic(rounds: list[list[float]], seed: int = 0) -> tuple[SampleStats, bool]:
    """The median of the per-call times, unless work was concentrated in some calls of a round.

    Every call of a round could see every slot's values once the round starts, so a candidate could
    do the work of several calls in one and return the rest at once: per round the total is what it
    is either way. When the rounds' median mean per call exceeds the per-call median by more than
    ``CONCENTRATION_PCT``, the rounds' means are the samples (True: concentrated)."""
    per_call = summarize([x for r in rounds for x in r], seed=seed)
    if len(rounds) < 2:
        return per_call, False
    per_round = summarize([sum(r) / len(r) for r in rounds], seed=seed)
    if per_round.median > per_call.median * (1 + CONCENTRATION_PCT / 100):
        return per_round, True
    return per_call, False


def _aggregate(method: str, rounds: list[RoundTimes], samples: list[float], reason: str, slots: int) -> EventTimes:
    calls = rounds[0].calls if method == "graph" else 1
    flushes = [f for r in rounds for f in r.flush_us]
    loads = [u for r in rounds for u in r.load_us]
    per_round = [EventTimes(samples_us=tuple(r.samples_us), method=method, wall_s=r.wall_s,
                            flush_us=float(np.median(r.flush_us)) if r.flush_us else 0.0,
                            load_us=float(np.median(r.load_us)) if r.load_us else 0.0, calls_per_sample=calls,
                            stop_reason=reason, spacer_s=r.spacer_s, hook_s=r.between_s).wall_per_call_us
                 for r in rounds if r.samples_us]
    return EventTimes(samples_us=tuple(samples), method=method, wall_s=sum(r.wall_s for r in rounds),
                      flush_us=float(np.median(flushes)) if flushes else 0.0,
                      load_us=float(np.median(loads)) if loads else 0.0, calls_per_sample=calls,
                      stop_reason=reason, spacer_s=sum(r.spacer_s for r in rounds),
                      hook_s=sum(r.between_s for r in rounds), batch=slots,
                      median_round_wall_per_call_us=float(np.median(per_round)) if per_round else math.nan)
