"""One task, one agent, one strategy: the whole of ``kernellab solve``.

``solve`` builds the agent's workspace in the output folder, starts the check service for it (so
``./check`` works inside a confinement), confines CLI agents with bubblewrap where it can run, runs
the strategy through a :class:`SearchContext` (cheap search verdicts from one warm session), judges
the kept kernel in full (every stage, holdout included, from ``best_kernel.py`` outside the
workspace, against the task re-read from its own files), and writes ``result.json``.

```
OUT/
  workspace/                 the agent's folder (TASK.md, reference.py, kernel.py, check)
  checks/checks.jsonl        the agent's own ./check runs (and their kernels)
  trajectory.jsonl           every proposal, verdict, cost and decision (agents.trajectory)
  results.sqlite, artifacts/ the same in a results store: one run, one job (kernellab.score)
  best_kernel.py             the answer
  result.json                the final verdict, usage totals, confinement, why it stopped
```

Every proposal is committed to the store as it is decided, so nothing completed is lost to a crash
or Ctrl-C; ``resume=True`` continues an unfinished solve in the same folder (recorded proposals are
judged again, not asked for again).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernellab.agents.base import AgentError, Budget, Usage, create_agent, registered
from kernellab.agents.check_service import CheckService
from kernellab.agents.confine import Probe, probe_confinement
from kernellab.agents.confine import confine as confine_command
from kernellab.agents.strategies import create_strategy
from kernellab.agents.strategies.base import Strategy, StrategyOutcome
from kernellab.agents.strategies.context import (
    Candidate,
    ReplayedAttempt,
    Resumed,
    SearchContext,
    SearchSetup,
    SolveProgress,
    verdict_line,
)
from kernellab.agents.strategies.evaluation import SearchEvaluator
from kernellab.agents.strategies.stopping import Stop
from kernellab.agents.strategies.verifier import LLMVerifier
from kernellab.agents.trajectory import TRAJECTORY_FILE, Trajectory, utc_now
from kernellab.agents.workspace import Workspace, build_workspace, load_workspace
from kernellab.evaluate.options import EvalOptions
from kernellab.evaluate.verdict import Status, Verdict
from kernellab.score.jsonable import json_ready
from kernellab.score.records import TaskKind
from kernellab.score.store import DB_NAME, Store
from kernellab.score.store_records import JobSpec
from kernellab.tasks.load import load_task
from kernellab.tasks.model import Task, TaskError

log = logging.getLogger(__name__)

RESULT_FILE = "result.json"
BEST_KERNEL = "best_kernel.py"
WORKSPACE_DIR = "workspace"
CHECKS_DIR = "checks"
_SECRET_WORDS = ("key", "token", "secret", "password")


class SolveError(TaskError):
    """A solve that cannot start as asked (an output folder in use, nothing to resume): one line."""


@dataclass(frozen=True)
class Confinement:
    """Whether the agent ran confined. ``applies``: the agent runs a process of its own (a CLI);
    in-process agents (replay, search, api) reach the workspace only through their own tools."""

    confined: bool
    reason: str | None
    tool: str | None
    applies: bool

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def plan_confinement(agent_cls: type, agent_name: str, confine: bool, probe: Probe | None) -> Confinement:
    from kernellab.agents.cli.cli_agent import CLIAgent

    process = issubclass(agent_cls, CLIAgent)
    if not confine:
        return Confinement(False, "confinement turned off (--no-confine)", None, process)
    if not process:
        return Confinement(True, f"no agent process: {agent_name} works in this process, through the workspace "
                                 f"only", None, False)
    probe = probe or probe_confinement()
    if probe.available:
        return Confinement(True, None, "bwrap", True)
    return Confinement(False, f"bwrap cannot confine here: {probe.detail}", None, True)


@dataclass
class SolveResult:
    task_id: str
    agent: str
    strategy: str
    seed: int
    out_dir: Path
    status: str  # passed | failed | holdout_failed | no_candidate | interrupted | error
    confinement: Confinement
    final_verdict: Verdict | None = None
    best_kernel: Path | None = None
    best_candidate: str | None = None
    best_iteration: int | None = None
    iterations: int = 0
    stop: Stop | None = None
    summary: str = ""
    usage: Usage = field(default_factory=Usage)
    verifier_usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    cost_unknown: bool = False
    eval_s: float = 0.0
    elapsed_s: float = 0.0
    run_id: int | None = None
    job_id: int | None = None
    error: str | None = None
    started: str = ""
    finished: str = ""

    @property
    def confined(self) -> bool:
        return self.confinement.confined

    @property
    def interrupted(self) -> bool:
        return self.status == "interrupted"

    @property
    def exit_code(self) -> int:
        """0 passed, 1 failed (or no kernel), 3 seen configs passed but holdout failed, 130 interrupted."""
        return {"passed": 0, "holdout_failed": 3, "interrupted": 130}.get(self.status, 1)

    @property
    def result_path(self) -> Path:
        return self.out_dir / RESULT_FILE

    @property
    def trajectory_path(self) -> Path:
        return self.out_dir / TRAJECTORY_FILE

    @property
    def store_path(self) -> Path:
        return self.out_dir / DB_NAME

    def to_dict(self) -> dict[str, Any]:
        def usage(u: Usage) -> dict[str, Any]:
            return {"tokens_in": u.tokens_in, "tokens_out": u.tokens_out, "cost_usd": u.cost_usd, "steps": u.steps,
                    "wall_s": round(u.wall_s, 3)}

        out = self.out_dir
        return {
            "schema": 1, "task": self.task_id, "agent": self.agent, "strategy": self.strategy, "seed": self.seed,
            "status": self.status, "exit_code": self.exit_code, "summary": self.summary, "error": self.error,
            "confined": self.confined, "confinement": self.confinement.to_dict(),
            "stop": self.stop.to_dict() if self.stop else None, "iterations": self.iterations,
            "best": {"candidate": self.best_candidate, "iteration": self.best_iteration,
                     "path": self.best_kernel.name if self.best_kernel else None},
            "final_verdict": self.final_verdict.to_dict() if self.final_verdict is not None else None,
            "usage": {"agent": usage(self.usage), "verifier": usage(self.verifier_usage),
                      "cost_usd": round(self.cost_usd, 6), "cost_unknown": self.cost_unknown,
                      "eval_s": round(self.eval_s, 3), "elapsed_s": round(self.elapsed_s, 3)},
            "started": self.started, "finished": self.finished, "run_id": self.run_id, "job_id": self.job_id,
            "paths": {"workspace": WORKSPACE_DIR, "trajectory": TRAJECTORY_FILE, "store": DB_NAME,
                      "checks": f"{CHECKS_DIR}/checks.jsonl", "result": RESULT_FILE, "out": str(out)},
        }


# ------------------------------------------------------------------------------------ solve


@dataclass(frozen=True)
class SolveOptions:
    """How to solve one task: the agent and its options, the strategy and its options, the budget,
    where results go, and how to evaluate. One frozen record resolved by the caller (the CLI, a
    campaign's job) and passed down, instead of a long keyword list.

    ``probe``: the confinement probe (default: this machine's); ``resume`` continues the unfinished
    solve in ``out_dir``; ``check_timeout_s`` bounds one ``kernellab check`` from inside the workspace.
    """

    agent: str
    out_dir: str | Path
    agent_options: Mapping[str, Any] = field(default_factory=dict)
    strategy: str = "single"
    strategy_options: Mapping[str, Any] = field(default_factory=dict)
    budget: Budget | str | None = None
    confine: bool = True
    eval_options: EvalOptions | None = None
    seed: int = 0
    resume: bool = False
    probe: Probe | None = None
    check_timeout_s: float = 900.0


def solve(task: Task | str | Path, options: SolveOptions, *,
          progress: Callable[[SolveProgress], None] | None = None) -> SolveResult:
    """Solve ``task`` as ``options`` say; see the module docstring for what lands in ``out_dir``.
    Ctrl-C ends it cleanly: what was recorded stays, the result says ``interrupted``."""
    o = options
    agent_name, out_dir, confine, probe = o.agent, o.out_dir, o.confine, o.probe
    if out_dir is None:
        raise SolveError("solve needs an output folder (out_dir, --out)")
    task = task if isinstance(task, Task) else load_task(task)
    budget = o.budget if isinstance(o.budget, Budget) else Budget.parse(o.budget)
    strategy = create_strategy(o.strategy, **dict(o.strategy_options or {}))
    agents = registered()
    if agent_name not in agents:
        raise AgentError(f"unknown agent {agent_name!r}; known: {', '.join(agents)}")
    out = Path(out_dir).expanduser().resolve()
    previous = _previous_solve(out, o.resume)
    confinement = plan_confinement(agents[agent_name], agent_name, confine, probe)
    holder: dict[str, CheckService] = {}
    agent_opts = dict(o.agent_options or {})
    if confinement.applies and confine and "wrap" not in agent_opts:
        agent_opts["wrap"] = _wrapper(holder, task, probe)
    agent = create_agent(agent_name, **agent_opts)  # a bad option fails before anything is written
    verifier = None
    try:
        v_opts = strategy.verifier_options()
        verifier = LLMVerifier(v_opts) if v_opts is not None else None
        run = _Run(task, agent_name, agent_opts, strategy, budget, out, confinement, o.seed, o.eval_options,
                   o.check_timeout_s, previous, holder)
        return run.execute(agent, verifier, progress)
    finally:
        agent.close()
        if verifier is not None:
            verifier.close()


def _previous_solve(out: Path, resume: bool) -> Store | None:
    """The store of an unfinished solve to resume, or None for a new solve (``out`` must be free)."""
    if (out / DB_NAME).exists():
        if not resume:
            raise SolveError(f"{out} already holds a solve ({DB_NAME}); pass --resume to continue it, or choose "
                             f"another --out")
        return Store.open(out, create=False)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SolveError(f"output folder {out} exists and is not empty (and holds no solve to resume)")
    return None


def _wrapper(holder: dict[str, CheckService], task: Task, probe: Probe | None) -> Callable[..., Any]:
    """``wrap`` for CLI agents: bubblewrap, the workspace read-write, the check socket reachable,
    the network shared (the model endpoint), the task's own folder and kernellab masked."""
    hide = [task.root] if task.root.is_dir() else []

    def wrap(argv: list[str], workspace: Path, env: dict[str, str]) -> Any:
        service = holder.get("service")
        extra = service.bind_paths if service is not None else []
        env = {**env, **(service.env if service is not None else {})}
        return confine_command(argv, workspace, network=True, env=env, extra_ro=extra, hide=hide, probe=probe)

    return wrap


class _Run:
    """The parts of one solve, set up, run and torn down in order."""

    def __init__(self, task: Task, agent_name: str, agent_opts: dict[str, Any], strategy: Strategy, budget: Budget,
                 out: Path, confinement: Confinement, seed: int, eval_options: EvalOptions | None,
                 check_timeout_s: float, previous: Store | None, holder: dict[str, CheckService]) -> None:
        self.task, self.agent_name, self.agent_opts = task, agent_name, agent_opts
        self.strategy, self.budget, self.out, self.confinement = strategy, budget, out, confinement
        self.seed, self.check_timeout_s, self.previous = seed, check_timeout_s, previous
        self.holder = holder  # where the confinement's wrap finds the check service
        self.eval_options = eval_options or EvalOptions()
        self.started = utc_now()
        self.clock = time.monotonic()

    def config(self) -> dict[str, Any]:
        return {"command": "solve", "task": self.task.id, "task_sha256": self.task.sha256, "agent": self.agent_name,
                "agent_options": redact(self.agent_opts), "strategy": self.strategy.name,
                "strategy_options": self.strategy.options_dict(), "budget": str(self.budget), "seed": self.seed,
                "confinement": self.confinement.to_dict(), "device": self.eval_options.device}

    def execute(self, agent: Any, verifier: LLMVerifier | None, progress: Callable | None) -> SolveResult:
        rules = self.strategy.stop_rules(self.budget)
        evaluator = SearchEvaluator(self.task, self.eval_options,
                                    compile_baseline=rules.target_speedup is not None and rules.target_vs == "compile")
        service = None
        trajectory = None
        try:
            trajectory, workspace, resumed = self._open(evaluator)
            service = CheckService(self.task, workspace, self.out / CHECKS_DIR, timeout_s=self.check_timeout_s,
                                   options=dataclasses.replace(self.eval_options, compile_baseline=False))
            self.holder["service"] = service
            service.start()
            setup = SearchSetup(self.task, workspace, agent, evaluator, trajectory, rules, seed=self.seed,
                                verifier=verifier, progress=progress, checks_log=service.log_path)
            ctx = SearchContext(setup, resumed)
            return self._search(ctx, trajectory, evaluator, workspace)
        finally:
            if service is not None:
                service.close()
            evaluator.close()
            if trajectory is not None:
                trajectory.close()
            elif self.previous is not None:
                self.previous.close()

    def _open(self, evaluator: SearchEvaluator) -> tuple[Trajectory, Workspace, Resumed | None]:
        device = evaluator.device_label  # an unusable device fails here, before anything is written
        if self.previous is None:
            workspace = build_workspace(self.task, self.out / WORKSPACE_DIR)
            spec = JobSpec(self.task.id, self.agent_name, self.seed, self.strategy.name, self.task.category,
                           TaskKind.of(bool(self.task.baseline_source)))
            trajectory = Trajectory.create(self.out, spec, self.config(), device=device,
                                           confined=self.confinement.confined)
            trajectory.event("run", **self.config(), run_id=trajectory.run.id, job_id=trajectory.job.id,
                             out=str(self.out))
            return trajectory, workspace, None
        return self._reopen()

    def _reopen(self) -> tuple[Trajectory, Workspace, Resumed]:
        store = self.previous
        assert store is not None
        run = store.latest_run()
        jobs = store.jobs(run.id) if run is not None else []
        if run is None or not jobs:
            raise SolveError(f"{self.out}: the results store holds no solve to resume")
        job = jobs[0]
        asked, was = self.config(), run.config
        for key in ("task", "task_sha256", "agent", "strategy", "strategy_options", "seed"):
            if asked.get(key) != was.get(key):
                raise SolveError(f"{self.out} holds a solve with another {key} ({was.get(key)!r}, not "
                                 f"{asked.get(key)!r}); resume it with the same task, agent, strategy, options and seed")
        if job.status == "done":
            raise SolveError(f"the solve in {self.out} is finished (see {RESULT_FILE}); nothing to resume")
        events = store.events(job)
        payloads = {e.payload.get("attempt_id"): e.payload for e in events if e.kind == "iteration"}
        start = next((e.payload for e in events if e.kind == "start"), None)
        replay, elapsed = [], 0.0
        for a in store.attempts(job):
            if a.final:
                continue
            path = store.kernel_path(a)
            source = path.read_text() if path is not None and path.exists() else None
            payload = payloads.get(a.id, {})
            replay.append(ReplayedAttempt(a.iteration, source, a.usage, a.note or "", payload))
            elapsed += (a.usage.wall_s or 0.0) + float(payload.get("eval_s") or 0.0)
        start_source = None
        if start is not None and start.get("sha256"):
            found = list((self.out / "artifacts").glob(f"*/{start['sha256']}.py"))
            start_source = found[0].read_text() if found else None
        workspace = load_workspace(self.out / WORKSPACE_DIR)
        trajectory = Trajectory.resume(self.out, store, run, job)
        trajectory.event("resume", replayed=len(replay), elapsed_before_s=round(elapsed, 3))
        return trajectory, workspace, Resumed(tuple(replay), elapsed, start_source)

    def _search(self, ctx: SearchContext, trajectory: Trajectory, evaluator: SearchEvaluator,
                workspace: Workspace) -> SolveResult:
        try:
            ctx.begin(record=self.previous is None)
            outcome = self.strategy.run(ctx)
            trajectory.event("stop", **outcome.stop.to_dict(), summary=outcome.summary, iterations=ctx.iterations)
            result = self._finalize(ctx, outcome, trajectory, evaluator, workspace)
            trajectory.finish("done")
        except KeyboardInterrupt:
            trajectory.event("interrupted", iterations=ctx.iterations,
                             best=ctx.best.id if ctx.best is not None else None)
            result = self._result(ctx, trajectory, "interrupted", ctx.best, None,
                                  Stop("interrupted", "interrupted (Ctrl-C); resume with --resume"), "")
            trajectory.requeue()
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            try:  # record the failure; the exception itself is what the caller gets
                trajectory.event("error", error=error, iterations=ctx.iterations)
                trajectory.finish("failed", error)
                self._result(ctx, trajectory, "error", ctx.best, None, None, "", error=error)
            except Exception:
                log.exception("could not record the failure of the solve in %s", self.out)
            raise
        ctx.emit("done", message=result.summary)
        return result

    def _finalize(self, ctx: SearchContext, outcome: StrategyOutcome, trajectory: Trajectory,
                  evaluator: SearchEvaluator, workspace: Workspace) -> SolveResult:
        chosen = outcome.answer or fallback(ctx.candidates)
        if chosen is None or chosen.source is None:
            return self._result(ctx, trajectory, "no_candidate", None, None, outcome.stop,
                                outcome.summary or "no kernel to judge")
        workspace.kernel_path.write_text(chosen.source)  # the answer stays in the workspace too
        best_path = self.out / BEST_KERNEL
        best_path.write_text(chosen.source)
        if chosen.full and chosen.verdict is not None:
            verdict, how = chosen.verdict, "its own full verdict"
        else:
            ctx.emit("final", message=f"full verdict of {chosen.id}, holdout included")
            began = time.monotonic()
            verdict, how = evaluator.final(best_path), "judged again in full from best_kernel.py"
            ctx.eval_s += time.monotonic() - began
        why = outcome.summary if outcome.answer is not None else "no correct kernel: the best attempt seen"
        trajectory.record_final(chosen.source, verdict, iteration=chosen.iteration, candidate=chosen.id,
                                note=f"final: {chosen.id} ({how}); {why}", line=verdict_line(
                                    dataclasses.replace(chosen, verdict=verdict, skipped=None)))
        status = ("passed" if verdict.holdout.correct is not False else "holdout_failed") \
            if verdict.status is Status.PASSED else "failed"
        return self._result(ctx, trajectory, status, chosen, verdict, outcome.stop, why)

    def _result(self, ctx: SearchContext, trajectory: Trajectory, status: str, chosen: Candidate | None,
                verdict: Verdict | None, stop: Stop | None, summary: str, error: str | None = None) -> SolveResult:
        best_path = None
        if chosen is not None and chosen.source is not None:
            best_path = self.out / BEST_KERNEL
            if not best_path.exists() or best_path.read_text() != chosen.source:
                best_path.write_text(chosen.source)
        result = SolveResult(
            task_id=self.task.id, agent=self.agent_name, strategy=self.strategy.name, seed=self.seed, out_dir=self.out,
            status=status, confinement=self.confinement, final_verdict=verdict, best_kernel=best_path,
            best_candidate=chosen.id if chosen else None, best_iteration=chosen.iteration if chosen else None,
            iterations=ctx.iterations, stop=stop, summary=summary, usage=ctx.agent_usage,
            verifier_usage=ctx.verifier_usage, cost_usd=ctx.cost_usd, cost_unknown=ctx.cost_unknown,
            eval_s=ctx.eval_s, elapsed_s=time.monotonic() - self.clock, run_id=trajectory.run.id,
            job_id=trajectory.job.id, error=error, started=self.started, finished=utc_now())
        write_json(result.result_path, result.to_dict())
        trajectory.write("result", status=status, exit_code=result.exit_code, best=result.best_candidate,
                         summary=summary, error=error)
        return result


def fallback(candidates: list[Candidate]) -> Candidate | None:
    """When a strategy keeps nothing correct: the best attempt seen (correct, then faster, then
    compiled, then later), judged kernels before unjudged ones; the starting skeleton never."""
    def rank(c: Candidate) -> tuple:
        v = c.verdict
        return (v is not None, bool(v and v.correct), c.speedup or 0.0, bool(v and v.compiled), c.iteration)

    pool = [c for c in candidates if c.source is not None and (c.iteration > 0 or c.verdict is not None)]
    return max(pool, key=rank) if pool else None


def redact(options: Mapping[str, Any]) -> dict[str, Any]:
    """Agent options as recorded: secrets and environments hidden, callables named."""
    out: dict[str, Any] = {}
    for key, value in options.items():
        if callable(value):
            out[key] = f"<{getattr(value, '__name__', 'callable')}>"
        elif key == "env" and isinstance(value, Mapping):
            out[key] = {k: "***" for k in value}
        elif any(word in key.lower() for word in _SECRET_WORDS) and not key.lower().endswith("_env"):
            out[key] = "***"
        else:
            out[key] = value if isinstance(value, (str, int, float, bool, type(None))) else str(value)
    return out


def write_json(path: Path, document: dict[str, Any]) -> None:
    """Atomically: a reader never sees half a file."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(json_ready(document), f, indent=1, default=str, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
