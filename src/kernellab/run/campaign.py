"""A campaign: tasks × agents × seeds under one strategy and a per-job budget, recorded in one
results store per run directory.

``RUN_DIR/results.sqlite`` holds the campaign's run record (its spec, device, versions, mode and
whether every agent ran confined) and one job per (task, agent, seed, strategy); each job's own solve
lives in ``RUN_DIR/jobs/<job-key>/`` and its attempts and events are copied into the campaign store
when it ends (``kernellab.run.job``), so ``kernellab report RUN_DIR`` reads the whole campaign.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kernellab.run.queue import JobQueue
from kernellab.score.records import TaskKind
from kernellab.score.store import DB_NAME, Store
from kernellab.score.store_records import JobSpec, RunRecord
from kernellab.tasks.catalog import suite_id, suite_task_dirs
from kernellab.tasks.load import SUITE_ROOT, load_task
from kernellab.tasks.model import Task, TaskError

JOBS_DIR = "jobs"
# A worker beats its job's heartbeat every 5 s; one silent this long is gone (on another host, where
# its process cannot be checked).
STALE_AFTER_S = 120.0
SUITE_WORDS = ("suite", "all")
# What identifies a campaign: a resumed one must ask for the same (backend, GPUs, concurrency may change).
SPEC_KEYS = ("tasks", "agents", "agent_options", "seeds", "strategy", "strategy_options", "budget", "confine",
             "eval_options")
# --eval-option: what a campaign may change in every job's evaluation (its verdicts are judged alike), by type
EVAL_OPTION_TYPES = {"compile_baseline": bool, "time_holdout": bool, "timing_budget_s": float,
                     "dtypes": ("one", "all"), "request_timeout_s": float}


class CampaignError(TaskError):
    """A campaign that cannot start as asked (one line, exit status 2)."""


@dataclass(frozen=True)
class CampaignSpec:
    """What a campaign runs. ``tasks`` are resolved task references (suite ids or absolute paths)."""

    tasks: tuple[str, ...]
    agents: tuple[str, ...]
    seeds: int = 1
    strategy: str = "single"
    agent_options: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    strategy_options: Mapping[str, str] = field(default_factory=dict)
    budget: str | None = None
    confine: bool = True
    eval_options: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.tasks:
            raise CampaignError("the campaign has no tasks (--tasks)")
        if not self.agents:
            raise CampaignError("the campaign has no agent (--agent)")
        if len(set(self.agents)) != len(self.agents):
            raise CampaignError(f"an agent is named twice: {', '.join(self.agents)}")
        if self.seeds < 1:
            raise CampaignError(f"--seeds must be at least 1, not {self.seeds}")
        unknown = set(self.agent_options) - set(self.agents)
        if unknown:
            raise CampaignError(f"--agent-option for {min(unknown)!r}, which is not among the agents "
                                f"({', '.join(self.agents)})")
        self.evaluation_overrides()  # a bad --eval-option fails here

    def to_dict(self) -> dict[str, Any]:
        return {"tasks": list(self.tasks), "agents": list(self.agents), "seeds": self.seeds,
                "strategy": self.strategy, "agent_options": {a: dict(o) for a, o in self.agent_options.items()},
                "strategy_options": dict(self.strategy_options), "budget": self.budget, "confine": self.confine,
                "eval_options": dict(self.eval_options)}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CampaignSpec:
        return cls(tasks=tuple(d["tasks"]), agents=tuple(d["agents"]), seeds=int(d["seeds"]),
                   strategy=d["strategy"], agent_options={a: dict(o) for a, o in d.get("agent_options", {}).items()},
                   strategy_options=dict(d.get("strategy_options") or {}), budget=d.get("budget"),
                   confine=bool(d.get("confine", True)), eval_options=dict(d.get("eval_options") or {}))

    def options_for(self, agent: str) -> dict[str, str]:
        return dict(self.agent_options.get(agent, {}))

    def evaluation_overrides(self) -> dict[str, Any]:
        """``eval_options`` converted for ``EvalOptions`` (``compile_baseline=false`` and so on)."""
        from kernellab.agents.base import parse_flag

        out: dict[str, Any] = {}
        for key, text in self.eval_options.items():
            kind = EVAL_OPTION_TYPES.get(key)
            if kind is None:
                raise CampaignError(f"--eval-option {key!r} is not one of {', '.join(EVAL_OPTION_TYPES)}")
            if isinstance(kind, tuple):
                if text not in kind:
                    raise CampaignError(f"--eval-option {key} must be one of {', '.join(kind)}, not {text!r}")
                if text != "all":
                    out[key] = text
                continue
            if kind is bool:
                value = parse_flag(text)
                if value is None:
                    raise CampaignError(f"--eval-option {key} must be true or false, not {text!r}")
            else:
                try:
                    value = float(text)
                except (TypeError, ValueError):
                    value = -1.0
                if not value > 0:
                    raise CampaignError(f"--eval-option {key} must be a positive number, not {text!r}")
            out[key] = value
        return out


@dataclass(frozen=True)
class Placement:
    """Where a campaign runs: mode ``gpu`` or ``interpret`` (no GPU: correctness only)."""

    mode: str
    backend: str = "local"
    gpus: tuple[int, ...] = ()
    agent_concurrency: int = 1
    address: str | None = None
    device: str = "cpu"
    lock_scope: str = "evaluation"  # the GPU lock held exclusively per evaluation, or per timing

    @property
    def interpret(self) -> bool:
        return self.mode == "interpret"

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"gpus": list(self.gpus)}


# ------------------------------------------------------------------------------------ tasks


def resolve_tasks(selector: str) -> tuple[str, ...]:
    """``--tasks``: comma-separated suite ids, suite categories (folder or ``category`` name), ``suite``
    or ``all`` (the whole built-in suite), task folders or ``.py`` files, or a folder of task folders.
    Each task is loaded once here, so a bad one fails before anything is written."""
    out: list[str] = []
    for item in (s.strip() for s in selector.split(",")):
        if not item:
            continue
        found = _resolve_one(item)
        out.extend(t for t in found if t not in out)
    if not out:
        raise CampaignError(f"--tasks {selector!r} names no task")
    return tuple(out)


def _resolve_one(item: str) -> list[str]:
    path = Path(item).expanduser()
    if item in SUITE_WORDS and not path.exists():
        return [suite_id(d) for d in suite_task_dirs()]
    if path.exists():
        if path.is_dir() and not (path / "reference.py").exists():
            refs = sorted(path.glob("*/reference.py")) or sorted(path.glob("*/*/reference.py"))
            if not refs:
                raise CampaignError(f"--tasks {item}: a folder with no task in it (no */reference.py)")
            return [str(load_task(r.parent).root.resolve()) for r in refs]
        load_task(path)
        return [str(path.resolve())]
    if (SUITE_ROOT / item / "reference.py").exists():
        load_task(item)
        return [item]
    folder = SUITE_ROOT / item
    if folder.is_dir():
        return [suite_id(d) for d in suite_task_dirs() if d.parent == folder]
    by_category = [suite_id(d) for d in suite_task_dirs() if load_task(d).category == item]
    if by_category:
        return by_category
    categories = sorted(p.name for p in SUITE_ROOT.iterdir() if p.is_dir())
    raise CampaignError(f"--tasks {item!r} is not a path, a suite id, a category ({', '.join(categories)}) "
                        f"or 'suite'")


def job_specs(spec: CampaignSpec, tasks: Mapping[str, Task] | None = None) -> list[JobSpec]:
    """Every (task, agent, seed, strategy) of the campaign, tasks outermost, in a stable order."""
    specs = []
    for ref in spec.tasks:
        task = tasks[ref] if tasks is not None else load_task(ref)
        kind = TaskKind.of(bool(task.baseline_source))
        for agent in spec.agents:
            for seed in range(spec.seeds):
                specs.append(JobSpec(ref, agent, seed, spec.strategy, task.category, kind))
    return specs


# ------------------------------------------------------------------------------------ the store


def open_campaign(run_dir: Path, spec: CampaignSpec, placement: Placement, *, confined: bool,
                  confinement: Mapping[str, Any], resume: bool) -> tuple[Store, RunRecord]:
    """Create the campaign's run record and jobs, or (``resume``) check that ``run_dir`` holds the same
    campaign, put the jobs of dead workers back to pending, and add any job still missing."""
    has_store = (run_dir / DB_NAME).exists()
    if has_store and not resume:
        raise CampaignError(f"{run_dir} already holds a campaign ({DB_NAME}); pass --resume to continue it, "
                            f"or choose another --out")
    if not has_store:
        if resume:
            raise CampaignError(f"{run_dir} holds no campaign to resume (no {DB_NAME})")
        if run_dir.exists() and (not run_dir.is_dir() or any(run_dir.iterdir())):
            raise CampaignError(f"output folder {run_dir} exists and is not empty")
    jobs = job_specs(spec)  # loads every task: a bad one fails before anything is written
    store = Store.open(run_dir)
    try:
        run = store.latest_run()
        if run is None:
            config = {"command": "run", **spec.to_dict(), "placement": placement.to_dict(),
                      "mode": placement.mode, "confinement": dict(confinement), "jobs_dir": JOBS_DIR}
            if placement.interpret:
                config["note"] = "no GPU: Triton interpreter, correctness only (no timings)"
            run = store.create_run(config, device=placement.device, confined=confined)
        else:
            check_same_spec(run, spec)
            was = campaign_placement(run).mode
            if was != placement.mode:
                raise CampaignError(f"the campaign in this folder ran in {was} mode; it cannot resume in "
                                    f"{placement.mode} mode (its verdicts would not compare)")
            JobQueue(store).requeue_dead(older_than_s=STALE_AFTER_S, run_id=run.id)
        JobQueue(store).enqueue(run.id, jobs)
        (run_dir / JOBS_DIR).mkdir(exist_ok=True)
    except BaseException:
        store.close()
        raise
    return store, run


def check_same_spec(run: RunRecord, spec: CampaignSpec) -> None:
    was, asked = campaign_spec(run).to_dict(), spec.to_dict()
    for key in SPEC_KEYS:
        if was.get(key) != asked.get(key):
            raise CampaignError(f"the campaign in this folder has another {key} ({was.get(key)!r}, not "
                                f"{asked.get(key)!r}); resume it with the same tasks, agents, seeds, strategy, "
                                f"options and budget")


def campaign_spec(run: RunRecord) -> CampaignSpec:
    if run.config.get("command") != "run":
        raise CampaignError("this results store holds no campaign (it was not written by `kernellab run`)")
    return CampaignSpec.from_dict(run.config)


def campaign_placement(run: RunRecord) -> Placement:
    p = dict(run.config.get("placement") or {})
    return Placement(mode=p.get("mode", run.config.get("mode", "interpret")), backend=p.get("backend", "local"),
                     gpus=tuple(p.get("gpus") or ()), agent_concurrency=int(p.get("agent_concurrency", 1)),
                     address=p.get("address"), device=p.get("device", run.device or "cpu"),
                     lock_scope=p.get("lock_scope", "evaluation"))
