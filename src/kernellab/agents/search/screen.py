"""Cheap pre-screening of candidate kernels with the agent's own ``EvalSession``.

The search agent may try several variants inside one proposal and hand back only the best: each is
checked on the task's small, seen and edge configs (and backward, where the task has one) and, on a
GPU, timed with a short budget. Holdout configs are never run here. The strategy's own verdict on
the returned kernel remains the judge; screening only saves it from evaluating losers.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path

from kernellab.evaluate.options import EvalOptions, with_stages
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage, Verdict
from kernellab.tasks.model import Task

log = logging.getLogger(__name__)

# Short timing: enough to tell a 2x better tile from a worse one, not to report a speedup.
SCREEN_OPTIONS = EvalOptions(configs="seen", trials=1, timing_budget_s=0.1, timing_min_samples=10,
                             timing_max_samples=60, compile_baseline=False, time_holdout=False,
                             request_timeout_s=120.0, compile_timeout_s=180.0, sanitize=False)


def screening_options(task: Task, base: EvalOptions = SCREEN_OPTIONS) -> EvalOptions:
    stages = [Stage.SMOKE, Stage.SHAPE_SWEEP, Stage.EDGE, Stage.TIMING]
    if task.backward:
        stages.append(Stage.BACKWARD)
    return with_stages(base, *stages)


@dataclass(frozen=True)
class Screened:
    correct: bool
    time_us: float | None  # geometric mean of the candidate's medians over timed rows; None without a GPU
    rows: tuple[tuple[str, float, float, float], ...]  # (row label, median, ci low, ci high)
    error: str | None
    seconds: float


def summarize(verdict: Verdict) -> tuple[float | None, tuple[tuple[str, float, float, float], ...]]:
    rows = tuple((f"{t.config}|{t.dtype}|{t.phase}", t.candidate_us, t.ci95_us[0], t.ci95_us[1])
                 for t in verdict.timings if t.candidate_us and t.candidate_us > 0)
    if not rows:
        return None, ()
    return math.exp(sum(math.log(r[1]) for r in rows) / len(rows)), rows


class Screener:
    """One warm session for a solve; ``measure`` evaluates a source text (results cached by hash)."""

    def __init__(self, task: Task, options: EvalOptions | None = None):
        self.task = task
        self.options = options or screening_options(task)
        self._session: EvalSession | None = None
        self._cache: dict[str, Screened] = {}
        self.evaluations = 0
        self.slowest_s = 0.0

    @property
    def session(self) -> EvalSession:
        if self._session is None:
            self._session = EvalSession(self.task, self.options)
        return self._session

    @property
    def on_gpu(self) -> bool:
        return self.session.device == "cuda"

    def measure(self, source: str) -> Screened:
        key = hashlib.sha256(source.encode()).hexdigest()
        if key in self._cache:
            return self._cache[key]
        path = Path(self.session.work_dir) / f"screen-{key[:16]}.py"
        path.write_text(source)
        started = time.monotonic()
        try:
            verdict = self.session.evaluate(path)
        finally:
            path.unlink(missing_ok=True)
        seconds = time.monotonic() - started
        self.evaluations += 1
        self.slowest_s = max(self.slowest_s, seconds)
        time_us, rows = summarize(verdict)
        result = Screened(verdict.correct, time_us, rows, verdict.error, seconds)
        log.debug("screened %s: correct=%s time=%s (%.1fs)", key[:8], result.correct, time_us, seconds)
        self._cache[key] = result
        return result

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
            self._session = None


def faster(candidate: Screened, incumbent: Screened, margin: float = 0.01) -> bool:
    """Whether ``candidate`` beats ``incumbent`` by ``margin`` over the rows both timed, beyond noise:
    the geometric mean of median ratios clears ``1 + margin`` and that of the pessimistic ratios
    (incumbent's CI low over candidate's CI high) clears 1."""
    if candidate.time_us is None or incumbent.time_us is None:
        return False
    mine = {label: (median, low, high) for label, median, low, high in candidate.rows}
    pairs = [(mine[label], (median, low, high)) for label, median, low, high in incumbent.rows if label in mine]
    if not pairs:
        return False
    ratio = math.exp(sum(math.log(old[0] / new[0]) for new, old in pairs) / len(pairs))
    pessimistic = math.exp(sum(math.log(max(old[1], 1e-9) / max(new[2], 1e-9)) for new, old in pairs) / len(pairs))
    return ratio >= 1 + margin and pessimistic > 1.0
