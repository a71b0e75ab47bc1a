"""The search context: what a strategy works through.

It owns the workspace, the agent, the evaluations, the optional verifier, the trajectory and the
stop rules, and gives a strategy five verbs: :meth:`SearchContext.propose` (write the parent into
kernel.py, ask the agent within the time left), :meth:`~SearchContext.evaluate` (the verifier's
pre-filter, then a cheap search verdict, or a full one), :meth:`~SearchContext.record` (the
strategy's decision and reason, written to the trajectory and the store), :meth:`~SearchContext.stop`
and :meth:`~SearchContext.feedback`. Candidates are numbered ``c<iteration>``; ``c0`` is the kernel
the workspace started with (the task's baseline, a given kernel, or a skeleton, which is not run).

A resumed solve hands the context the attempts recorded before: they are proposed again from the
store in order (the agent is not asked), judged again (cheaply), and not recorded twice.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernellab.agents.base import Agent, AgentError, Proposal, ProposalRequest, Usage
from kernellab.agents.feedback import format_feedback, verdict_summary
from kernellab.agents.strategies.compare import speedup_vs
from kernellab.agents.strategies.evaluation import SearchEvaluator
from kernellab.agents.strategies.stopping import Stop, StopRules, StopState
from kernellab.agents.strategies.verifier import LLMVerifier, Prediction
from kernellab.agents.trajectory import Trajectory
from kernellab.agents.workspace import Workspace, public_task
from kernellab.evaluate.verdict import Verdict
from kernellab.score.store_records import AttemptUsage
from kernellab.tasks.model import Task

log = logging.getLogger(__name__)

LINE_CHARS = 100


@dataclass
class Candidate:
    """One kernel of a search: what produced it, its verdict, and what it cost."""

    id: str
    iteration: int
    source: str | None
    parent_id: str | None = None
    others: tuple[str, ...] = ()
    operator: str = "proposal"
    instructions: str | None = None
    seed: int = 0
    sha256: str | None = None
    path: Path | None = None  # the kernel file, outside the workspace
    verdict: Verdict | None = None
    full: bool = False  # the verdict is a full one (every stage, holdout, pristine task)
    note: str = ""
    timed_out: bool = False
    log_path: Path | None = None
    usage: Usage = field(default_factory=Usage)
    prediction: Prediction | None = None
    skipped: str | None = None
    reused_from: str | None = None  # the same kernel was judged before, as this candidate
    eval_s: float = 0.0
    checks: list[dict[str, Any]] = field(default_factory=list)
    confined: bool | None = None
    replayed: bool = False
    attempt_id: int | None = None

    @property
    def correct(self) -> bool:
        return self.verdict is not None and self.verdict.correct

    @property
    def speedup(self) -> float | None:
        return speedup_vs(self.verdict)

    def line(self) -> str:
        """One line: ``c3: passed x1.42 vs eager``, ``c2: failed at smoke: ...``, ``c4: no kernel``."""
        return f"{self.id}: {verdict_line(self)}"


def verdict_line(c: Candidate) -> str:
    if c.source is None:
        return _clip(f"no kernel ({c.note})" if c.note else "no kernel")
    if c.skipped:
        return _clip(f"not run: {c.skipped}")
    v = c.verdict
    if v is None:
        return _clip(c.note) if c.note else "not evaluated"
    if v.correct:
        s = speedup_vs(v)
        text = "passed " + (f"x{s:.2f} vs eager" if s is not None else "(not timed)")
        if v.holdout.correct is not None:
            text += ", holdout " + ("correct" if v.holdout.correct else "FAILED")
        return text
    where = f" at {v.failed_stage.value}" if v.failed_stage else ""
    return _clip(f"{v.status.value}{where}" + (f": {v.error}" if v.error else ""))


def rejection(c: Candidate) -> str:
    """Why ``c`` cannot be kept: no kernel, not run, or where its verdict failed."""
    if c.source is None:
        return f"no kernel: {c.note or 'the agent produced none'}"
    if c.skipped:
        return c.skipped
    v = c.verdict
    if v is None:
        return "not judged"
    where = f" at {v.failed_stage.value}" if v.failed_stage else ""
    return f"incorrect ({v.status.value}{where})"


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LINE_CHARS else text[:LINE_CHARS - 3] + "..."


@dataclass(frozen=True)
class SolveProgress:
    """What a live display shows, sent after every step of a solve."""

    phase: str  # start | proposing | verifying | evaluating | iteration | final | done
    iteration: int  # the iteration in progress (or just recorded)
    iterations: int  # proposals recorded so far
    best: str  # the best kernel so far, as one line
    best_speedup: float | None
    budget: dict[str, str]  # each stop rule's standing
    last: str  # the last verdict, as one line
    elapsed_s: float
    cost_usd: float
    message: str = ""


@dataclass(frozen=True)
class ReplayedAttempt:
    """An attempt recorded by an earlier run of the same solve, proposed again on resume."""

    iteration: int
    source: str | None
    usage: AttemptUsage
    note: str
    record: dict[str, Any]  # its ``iteration`` event


@dataclass(frozen=True)
class Resumed:
    """What a resumed solve carries over: the attempts to replay, the time they took, the start kernel."""

    replay: tuple[ReplayedAttempt, ...] = ()
    elapsed_s: float = 0.0
    start_source: str | None = None


@dataclass
class SearchSetup:
    """What a search works with (``solve`` builds it)."""

    task: Task  # the pristine task; agents and search verdicts only ever see its public part
    workspace: Workspace
    agent: Agent
    evaluator: SearchEvaluator
    trajectory: Trajectory
    rules: StopRules
    seed: int = 0
    verifier: LLMVerifier | None = None
    progress: Callable[[SolveProgress], None] | None = None
    checks_log: Path | None = None  # the check service's log: the agent's own ./check runs


class SearchContext:
    def __init__(self, setup: SearchSetup, resumed: Resumed | None = None) -> None:
        resumed = resumed or Resumed()
        self.task = setup.task
        self.public_task = public_task(setup.task)
        self.workspace = setup.workspace
        self.agent = setup.agent
        self.evaluator = setup.evaluator
        self.trajectory = setup.trajectory
        self.rules = setup.rules
        self.seed = setup.seed
        self.rng = random.Random(setup.seed)
        self._audit_rng = random.Random(setup.seed + 7919)
        self.verifier = setup.verifier
        self.progress = setup.progress
        self.checks_log = setup.checks_log
        log_file = setup.checks_log
        self._checks_offset = log_file.stat().st_size if log_file is not None and log_file.exists() else 0
        self._replay = list(resumed.replay)
        self._started = time.monotonic() - resumed.elapsed_s
        self.candidates: list[Candidate] = []
        self.best: Candidate | None = None
        self.iterations = 0
        self.not_improved = 0
        self.cost_usd = 0.0
        self.cost_unknown = False
        self.agent_usage = Usage()
        self.verifier_usage = Usage()
        self.eval_s = 0.0
        self._by_sha: dict[str, Candidate] = {}
        workspace = setup.workspace
        source = resumed.start_source if resumed.start_source is not None else workspace.kernel_path.read_text()
        self.start = Candidate("c0", 0, source, operator=f"start ({workspace.kernel_origin})")

    # -------------------------------------------------------------------------------- state

    @property
    def elapsed_s(self) -> float:
        return time.monotonic() - self._started

    def state(self) -> StopState:
        return StopState(self.iterations, self.elapsed_s, self.cost_usd, self.cost_unknown, self.not_improved,
                         self.best.verdict if self.best is not None else None)

    def stop(self) -> Stop | None:
        return self.rules.check(self.state())

    def time_left(self) -> float | None:
        return self.rules.time_left(self.state())

    def emit(self, phase: str, *, iteration: int | None = None, last: Candidate | None = None,
             message: str = "") -> None:
        if self.progress is None:
            return
        best = self.best
        self.progress(SolveProgress(
            phase=phase, iteration=self.iterations if iteration is None else iteration, iterations=self.iterations,
            best=best.line() if best is not None else "none correct yet",
            best_speedup=best.speedup if best is not None else None,
            budget=self.rules.standing(self.state()), last=last.line() if last is not None else "",
            elapsed_s=self.elapsed_s, cost_usd=self.cost_usd, message=message))

    # -------------------------------------------------------------------------------- the start

    def begin(self, *, record: bool = True) -> Candidate:
        """Judge the starting kernel (a skeleton is not run: it cannot pass) and record it (a resumed
        solve recorded it before)."""
        start = self.start
        start.sha256, start.path = self.trajectory.save_kernel(start.source or "")
        if self.workspace.kernel_origin == "skeleton":
            start.note = "a skeleton: not run"
        else:
            self.emit("evaluating", iteration=0, message="judging the starting kernel")
            self._judge(start, full=False)
            if start.correct:
                self.best = start
        self.candidates.append(start)
        self._by_sha.setdefault(start.sha256, start)
        if record:
            self.trajectory.event("start", candidate=start.id, origin=self.workspace.kernel_origin,
                                  sha256=start.sha256, note=start.note, eval_s=round(start.eval_s, 3),
                                  verdict=verdict_summary(start.verdict) if start.verdict else None,
                                  line=start.line())
        self.emit("start", iteration=0, last=start)
        return start

    # -------------------------------------------------------------------------------- proposing

    def propose(self, parent: Candidate, *, operator: str = "proposal", instructions: str | None = None,
                others: Sequence[Candidate] = (), feedback: str | None = None, seed: int | None = None) -> Candidate:
        """One proposal from ``parent`` (written to kernel.py first). Counts against the budget."""
        iteration = self.iterations + 1
        seed = self.seed + iteration if seed is None else seed
        cand = Candidate(f"c{iteration}", iteration, None, parent_id=parent.id, others=tuple(o.id for o in others),
                         operator=operator, instructions=instructions, seed=seed)
        self.iterations = iteration
        if self._replay:
            return self._replayed(cand)
        self.workspace.kernel_path.write_text(parent.source or "")
        self.emit("proposing", iteration=iteration, message=f"{operator} from {parent.id}")
        request = ProposalRequest(workspace=self.workspace.path, task_id=self.task.id, iteration=iteration,
                                  parent=parent.source or "", feedback=feedback, instructions=instructions,
                                  others=tuple(o.source for o in others if o.source), deadline_s=self.time_left(),
                                  seed=seed)
        try:
            proposal = self.agent.propose(request)
        except AgentError as exc:
            proposal = Proposal(None, note=f"the agent failed: {exc}")
        cand.source, cand.note, cand.timed_out = proposal.source, proposal.note, proposal.timed_out
        cand.log_path, cand.usage = proposal.log_path, proposal.usage
        last_run = getattr(self.agent, "last_run", None)
        cand.confined = getattr(last_run, "confined", None)
        cand.checks = self._new_checks()
        self._charge(cand.usage, agent=True)
        if cand.source is not None:
            cand.sha256, cand.path = self.trajectory.save_kernel(cand.source)
        return cand

    def _replayed(self, cand: Candidate) -> Candidate:
        attempt = self._replay.pop(0)
        record = attempt.record
        self.iterations = cand.iteration = attempt.iteration  # as recorded (they are 1, 2, ... in order)
        cand.id = f"c{attempt.iteration}"
        cand.replayed = True
        cand.source, cand.note = attempt.source, (record.get("proposal") or {}).get("note") or attempt.note
        u = attempt.usage
        cand.usage = Usage(u.tokens_in, u.tokens_out, u.cost_usd, u.agent_steps or 0, u.wall_s or 0.0)
        self._charge(cand.usage, agent=True)
        if record.get("verifier"):
            p = record["verifier"]
            cand.prediction = Prediction(p.get("predicted_correct"), p.get("confidence"), p.get("reason") or "",
                                         error=p.get("error"))
            cand.skipped = record.get("skipped")
        if cand.source is not None:
            cand.sha256, cand.path = self.trajectory.save_kernel(cand.source)
        return cand

    def _charge(self, usage: Usage, *, agent: bool) -> None:
        if agent:
            self.agent_usage = self.agent_usage.add(usage)
            if usage.cost_usd is None and getattr(self.agent, "uses_llm", True):
                self.cost_unknown = True
        else:
            self.verifier_usage = self.verifier_usage.add(usage)
        self.cost_usd += usage.cost_usd or 0.0

    def _new_checks(self) -> list[dict[str, Any]]:
        """The agent's own ``./check`` runs since the last proposal (from the check service's log)."""
        if self.checks_log is None or not self.checks_log.exists():
            return []
        with self.checks_log.open("rb") as f:
            f.seek(self._checks_offset)
            data = f.read()
        end = data.rfind(b"\n") + 1
        self._checks_offset += end
        checks = []
        for line in data[:end].decode(errors="replace").splitlines():
            try:
                r = json.loads(line)
            except ValueError:
                continue
            checks.append({k: r.get(k) for k in ("check", "status", "correct", "failed_stage", "speedup",
                                                  "seconds", "timed_out", "profile", "kernel_sha256")})
        return checks

    # -------------------------------------------------------------------------------- evaluating

    def evaluate(self, cand: Candidate, *, full: bool = False) -> Candidate:
        """Judge ``cand``: the verifier may skip it (predicted incorrect); the same kernel judged
        before reuses that verdict; otherwise a search verdict, or with ``full`` the final one."""
        if cand.source is None or cand.skipped:
            return cand
        if self.verifier is not None and not full and cand.prediction is None:
            self.emit("verifying", iteration=cand.iteration, message=f"verifier on {cand.id}")
            cand.prediction = self.verifier.judge(self.public_task, cand.source, self.time_left())
            self._charge(cand.prediction.usage, agent=False)
            options = self.verifier.options
            if cand.prediction.predicts_incorrect(options.threshold) and self._audit_rng.random() >= options.audit:
                why = cand.prediction.reason or "no reason given"
                cand.skipped = f"the verifier predicted it incorrect ({why})"
                return cand
        earlier = self._by_sha.get(cand.sha256 or "")
        if earlier is not None and earlier.verdict is not None and (earlier.full or not full):
            cand.verdict, cand.full, cand.reused_from = earlier.verdict, earlier.full, earlier.id
            return cand
        self.emit("evaluating", iteration=cand.iteration, message=f"judging {cand.id}")
        self._judge(cand, full=full)
        self._by_sha[cand.sha256 or ""] = cand
        return cand

    def _judge(self, cand: Candidate, *, full: bool) -> None:
        started = time.monotonic()
        assert cand.path is not None
        cand.verdict = self.evaluator.final(cand.path) if full else self.evaluator.search(cand.path)
        cand.full = full
        cand.eval_s = time.monotonic() - started
        self.eval_s += cand.eval_s

    # -------------------------------------------------------------------------------- deciding

    def record(self, cand: Candidate, *, decision: str, reason: str, kept: bool, improved: bool) -> None:
        """The strategy's decision on ``cand``: into the trajectory and the store (an attempt),
        and into the stop rules' state (``improved``: it is the new best)."""
        if improved:
            self.best = cand
            self.not_improved = 0
        else:
            self.not_improved += 1
        self.candidates.append(cand)
        if cand.replayed:
            self.trajectory.write("replayed", iteration=cand.iteration, candidate=cand.id, decision=decision,
                                  reason=reason, line=cand.line())
        else:
            record = self._record_of(cand, decision, reason, kept, improved)
            u, p = cand.usage, cand.prediction.usage if cand.prediction else Usage()
            usage = AttemptUsage(tokens_in=_plus(u.tokens_in, p.tokens_in), tokens_out=_plus(u.tokens_out, p.tokens_out),
                                 cost_usd=_plus(u.cost_usd, p.cost_usd), agent_steps=u.steps, wall_s=round(u.wall_s, 3))
            attempt = self.trajectory.record_iteration(record, source=cand.source, verdict=cand.verdict, usage=usage,
                                                       kept=kept)
            cand.attempt_id = attempt.id
        self.emit("iteration", iteration=cand.iteration, last=cand, message=f"{decision}: {reason}")

    def mark_kept(self, cand: Candidate, reason: str) -> None:
        """A decision taken after the fact (the winner of best-of-n)."""
        if cand.attempt_id is not None:
            self.trajectory.mark_kept(cand.attempt_id, candidate=cand.id, iteration=cand.iteration, reason=reason)

    def _record_of(self, c: Candidate, decision: str, reason: str, kept: bool, improved: bool) -> dict[str, Any]:
        u = c.usage
        return {
            "iteration": c.iteration, "candidate": c.id, "parent": c.parent_id, "others": list(c.others),
            "operator": c.operator, "instructions": c.instructions, "seed": c.seed,
            "proposal": {"note": c.note[:2000], "timed_out": c.timed_out,
                         "log": str(c.log_path) if c.log_path else None, "sha256": c.sha256,
                         "kernel": str(c.path.relative_to(self.trajectory.out_dir.resolve())) if c.path else None},
            "usage": {"tokens_in": u.tokens_in, "tokens_out": u.tokens_out, "cost_usd": u.cost_usd,
                      "steps": u.steps, "wall_s": round(u.wall_s, 3)},
            "checks": c.checks, "confined": c.confined,
            "verifier": c.prediction.to_dict() if c.prediction else None, "skipped": c.skipped,
            "evaluation": None if c.verdict is None else ("reused" if c.reused_from else "full" if c.full else "search"),
            "reused_from": c.reused_from, "eval_s": round(c.eval_s, 3),
            "verdict": verdict_summary(c.verdict) if c.verdict is not None else None, "line": verdict_line(c),
            "decision": decision, "reason": reason, "kept": kept, "improved": improved,
            "best": self.best.id if self.best is not None else None,
        }

    # -------------------------------------------------------------------------------- feedback

    def feedback(self, cand: Candidate | None, *, outcome: str | None = None) -> str | None:
        """What the agent is told about ``cand`` (the kernel in hand, or its last attempt): the
        compact check feedback of its verdict (never holdout), and ``outcome`` if given."""
        if cand is None:
            return None
        if cand.source is None:
            text = f"The last proposal produced no kernel ({cand.note or 'no reason given'})."
        elif cand.skipped:
            text = f"The last kernel was not run: {cand.skipped}."
        elif cand.verdict is None:
            return outcome
        else:
            text = format_feedback(cand.verdict, task_id=self.task.id).rstrip()
        return text + (f"\n{outcome}" if outcome else "")


def _plus(a: float | None, b: float | None) -> Any:
    return b if a is None else a if b is None else a + b
