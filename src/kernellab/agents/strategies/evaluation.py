"""The two evaluations of a solve: cheap ones inside the search, one full one at the end.

- ``search``: one warm :class:`EvalSession` over the *public* task (holdout configs removed, so a
  search verdict can never carry them into feedback), with a cheap stage selection: static, load,
  smoke, the seen-config shape sweep, edge configs, backward where the task has it, and timing with
  a short budget and no ``torch.compile`` baseline (unless a stop rule targets a speedup over it).
  Stability, determinism and sanitize (compute-sanitizer, seconds per candidate) are left to the end.
- ``final``: a session over the pristine task (re-read from its own files, never from the
  workspace's copy) running every stage, holdout included, on a kernel file outside the workspace.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path

from kernellab.agents.workspace import public_task
from kernellab.evaluate.options import ALL_STAGES, EvalOptions, with_stages
from kernellab.evaluate.session import EvalSession
from kernellab.evaluate.verdict import Stage, Verdict
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Task, TaskError

log = logging.getLogger(__name__)

SEARCH_STAGES = (Stage.SMOKE, Stage.SHAPE_SWEEP, Stage.EDGE, Stage.BACKWARD, Stage.TIMING)
SEARCH_TIMING_BUDGET_S = 0.3  # per config x dtype: enough to rank kernels, a fifth of a full timing
SEARCH_TRIALS = 2  # fresh input sets per seen config in the search's shape sweep


def search_options(base: EvalOptions, *, compile_baseline: bool = False) -> EvalOptions:
    """``compile_baseline``: time ``torch.compile`` too (a stop rule that targets a speedup over it)."""
    cheap = dataclasses.replace(base, configs="seen", time_holdout=False, compile_baseline=compile_baseline,
                                sanitize=False,
                                timing_budget_s=min(base.timing_budget_s, SEARCH_TIMING_BUDGET_S),
                                trials=min(base.trials, SEARCH_TRIALS))
    return with_stages(cheap, *SEARCH_STAGES)


def final_options(base: EvalOptions) -> EvalOptions:
    """Every stage, holdout included, and sanitize (on a GPU) unless ``base`` turned it off."""
    return dataclasses.replace(base, configs="all", stages=ALL_STAGES)


def pristine_task(task: Task) -> Task:
    """``task`` read again from its own files (a check that they did not change during the solve);
    a task made in memory, with no files to read, is used as it is."""
    path = task.root / f"{task.id.rsplit('/', 1)[-1]}.py" if task.kernelbench else task.root
    try:
        again = load_task(path)
    except (TaskError, OSError) as exc:
        log.info("task %s not re-read from %s (%s): using the task as loaded", task.id, path, exc)
        return task
    again = dataclasses.replace(again, id=task.id)
    if again.sha256 != task.sha256:
        raise TaskError(f"the files of task {task.id} at {path} changed during the solve; the final verdict "
                        f"would judge a different task")
    return again


class SearchEvaluator:
    """Both sessions, made when first needed and closed together."""

    def __init__(self, task: Task, options: EvalOptions | None = None, *, compile_baseline: bool = False) -> None:
        self.task = task
        self.base = options or EvalOptions()
        self.compile_baseline = compile_baseline and self.base.compile_baseline
        self._search: EvalSession | None = None
        self._final: EvalSession | None = None

    @property
    def search_session(self) -> EvalSession:
        if self._search is None:
            self._search = EvalSession(public_task(self.task),
                                       search_options(self.base, compile_baseline=self.compile_baseline))
        return self._search

    def search(self, kernel: Path) -> Verdict:
        return self.search_session.evaluate(kernel)

    def final(self, kernel: Path) -> Verdict:
        if self._final is None:
            self._final = EvalSession(pristine_task(self.task), final_options(self.base))
        return self._final.evaluate(kernel)

    @property
    def device_label(self) -> str:
        return self.search_session.device_label

    def close(self) -> None:
        for session in (self._search, self._final):
            if session is not None:
                session.close()
        self._search = self._final = None
