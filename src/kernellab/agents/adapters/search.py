"""``search``: launch-parameter tuning and parametric templates, no LLM.

Each proposal returns one kernel for the task:

- a *template* instantiation (``kernellab.kernels``) when the task's reference matches one: a
  complete Triton ``ModelNew`` (elementwise chains, row reductions, softmax, RMSNorm/LayerNorm,
  tiled matmul with epilogue);
- otherwise, or once the templates are tried, a *rewrite of the kernel in hand* with new launch
  parameters (block sizes tied to their grid, ``num_warps``, ``num_stages``, template knobs,
  autotune configs): see ``kernellab.agents.search.params``.

The agent is stateful for one solve. It learns from the strategy without parsing feedback: when the
next request's parent is the kernel it proposed, that change was kept and it steps further the same
way; otherwise it was reverted and the next candidate of the same parent comes.

With ``screen`` on (the default) and the task loadable here (the workspace's task, else the suite id;
holdout configs removed either way), the agent keeps its own warm ``EvalSession`` and, within ``request.deadline_s``, checks up to ``max_screen`` candidates on small,
seen and edge configs (timed briefly on a GPU; holdout configs never) and returns the best correct one.
On a GPU it returns nothing when no screened candidate beats the kernel in hand by 1% beyond noise,
so the strategy's full evaluation is not spent on a loser; without a GPU it returns the first correct
one. With ``screen`` off every call returns the next untried candidate unchecked, in a deterministic
order for a seed, and the strategy's verdict does the screening.

Options: ``screen`` (bool), ``max_screen`` (int, candidates per proposal), ``templates`` (bool),
``tune`` (bool), ``seed`` (int; default: the request's seed).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from kernellab.agents.base import (
    Agent,
    AgentError,
    Availability,
    Proposal,
    ProposalRequest,
    Usage,
    parse_flag,
    parse_number,
    register,
)
from kernellab.agents.search.candidates import Candidate, CandidatePool
from kernellab.agents.search.screen import Screened, Screener, faster
from kernellab.tasks.model import Task, TaskError

log = logging.getLogger(__name__)

FIRST_ESTIMATE_S = 20.0  # assumed length of one screening evaluation before any was measured


def _flag(name: str, value: Any) -> bool:
    flag = parse_flag(value)
    if flag is None:
        raise AgentError(f"search: option {name} must be true or false, not {value!r}")
    return flag


def _integer(name: str, value: Any) -> int:
    try:
        return int(parse_number(value, whole=True))
    except ValueError as exc:
        raise AgentError(f"search: option {name} must be {exc}, not {value!r}") from None


def _count(name: str, value: Any) -> int:
    number = _integer(name, value)
    if number < 1:
        raise AgentError(f"search: option {name} must be at least 1")
    return number


@register("search")
class SearchAgent(Agent):
    uses_llm = False

    def __init__(self, screen: Any = True, max_screen: Any = 6, templates: Any = True, tune: Any = True,
                 seed: Any = None, **unknown: Any):
        if unknown:
            raise AgentError(f"search: unknown option {min(unknown)!r} (options: screen, max_screen, templates, "
                             f"tune, seed)")
        self.screen = _flag("screen", screen)
        self.max_screen = _count("max_screen", max_screen)
        self.templates = _flag("templates", templates)
        self.tune = _flag("tune", tune)
        self.seed = None if seed is None else _integer("seed", seed)
        if not (self.templates or self.tune):
            raise AgentError("search: templates and tune are both off: nothing to propose")
        self._pools: dict[str, CandidatePool] = {}
        self._screeners: dict[str, Screener | None] = {}

    # ------------------------------------------------------------------------------------ the interface

    @classmethod
    def availability(cls) -> Availability:
        from kernellab.kernels import templates

        return Availability(True, f"built in: launch-parameter tuning and {len(templates())} templates "
                                  f"({', '.join(templates())})")

    def propose(self, request: ProposalRequest) -> Proposal:
        started = time.monotonic()
        pool = self._pool(request)
        pool.observe(request.parent)
        candidates = pool.candidates(request.parent)
        if not candidates:
            what = "no template matches this task and " if not pool.template_candidates() else ""
            return Proposal(None, Usage(wall_s=time.monotonic() - started),
                            note=f"search: {what}no untried launch-parameter change is left for this kernel")
        screener = self._screener(request) if self.screen else None
        needed = 2 if screener is not None and screener.on_gpu else 1  # on a GPU, the kernel in hand is timed too
        if screener is None or not self._time_for(request, screener, started, needed):
            pick = candidates[0]
            pool.mark(pick, proposed=True)
            why = "" if screener is None else " (unscreened: the deadline leaves no time to check it)"
            return Proposal(pick.source, Usage(wall_s=time.monotonic() - started), note=pick.description + why)
        return self._screened(request, pool, screener, candidates, started)

    def close(self) -> None:
        for screener in self._screeners.values():
            if screener is not None:
                screener.close()
        self._screeners.clear()

    # ------------------------------------------------------------------------------------ screening

    def _screened(self, request: ProposalRequest, pool: CandidatePool, screener: Screener,
                  candidates: list[Candidate], started: float) -> Proposal:
        before = screener.evaluations
        incumbent: Screened | None = None
        if screener.on_gpu:
            incumbent = screener.measure(request.parent)
        best: tuple[Candidate, Screened] | None = None
        failures = 0
        measured = 0
        for candidate in candidates[:self.max_screen]:
            if not self._time_for(request, screener, started, 1):
                break
            result = screener.measure(candidate.source)
            measured += 1
            pool.mark(candidate, proposed=False)
            if not result.correct:
                failures += 1
                continue
            if not screener.on_gpu:  # no timings here: the first correct candidate is the answer
                best = (candidate, result)
                break
            if best is None or (result.time_us or float("inf")) < (best[1].time_us or float("inf")):
                best = (candidate, result)
        usage = Usage(steps=screener.evaluations - before, wall_s=time.monotonic() - started)
        checked = measured
        if measured == 0:  # measuring the kernel in hand used the time: hand over the best guess unchecked
            pool.mark(candidates[0], proposed=True)
            return Proposal(candidates[0].source, usage, note=candidates[0].description +
                            " (unscreened: the deadline leaves no time to check it)")
        if best is None:
            return Proposal(None, usage, note=f"search: none of {checked} screened candidates was correct")
        candidate, result = best
        if incumbent is not None and incumbent.correct and not faster(result, incumbent):
            return Proposal(None, usage, note=f"search: none of {checked} screened candidates beat the kernel in "
                                              f"hand by 1% beyond noise (best: {candidate.description})")
        pool.mark(candidate, proposed=True)
        gain = ""
        if incumbent is not None and incumbent.time_us and result.time_us:
            gain = f"; screened {incumbent.time_us / result.time_us:.2f}x vs the kernel in hand"
        return Proposal(candidate.source, usage, note=f"{candidate.description} ({checked} screened, "
                                                      f"{failures} incorrect{gain})")

    def _time_for(self, request: ProposalRequest, screener: Screener, started: float, evaluations: int) -> bool:
        """Whether ``evaluations`` more screening evaluations fit before the deadline (20% margin)."""
        if request.deadline_s is None:
            return True
        estimate = screener.slowest_s or FIRST_ESTIMATE_S
        return time.monotonic() - started + 1.2 * estimate * evaluations <= request.deadline_s

    # ------------------------------------------------------------------------------------ per-task state

    def _pool(self, request: ProposalRequest) -> CandidatePool:
        if request.task_id not in self._pools:
            seed = request.seed if self.seed is None else self.seed
            self._pools[request.task_id] = CandidatePool(_load(request), seed, self.templates, self.tune)
        return self._pools[request.task_id]

    def _screener(self, request: ProposalRequest) -> Screener | None:
        if request.task_id not in self._screeners:
            task = self._pools[request.task_id].task
            self._screeners[request.task_id] = Screener(task) if task is not None else None
        return self._screeners[request.task_id]


def _load(request: ProposalRequest) -> Task | None:
    """The task without its holdout configs: the workspace's own task, else the suite id's."""
    from kernellab.agents.workspace import load_workspace, public_task
    from kernellab.tasks.load import load_task

    try:
        return load_workspace(Path(request.workspace)).task()
    except (TaskError, OSError) as exc:
        log.debug("search: no workspace task at %s: %s", request.workspace, exc)
    try:
        return public_task(load_task(request.task_id))
    except (TaskError, OSError) as exc:
        log.debug("search: cannot load task %s: %s", request.task_id, exc)
    return None
