"""The rows of the results store as typed records (what ``Store`` takes and returns)."""

from __future__ import annotations

import enum
import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from kernellab.evaluate.verdict import Verdict
from kernellab.score.records import TaskKind


class JobStatus(str, enum.Enum):
    """Where a job of a campaign stands (the ``jobs.status`` column; ``schema.JOB_STATUSES`` spells
    the same words in the table's CHECK constraint)."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"  # finished with what the agent produced (whatever its verdict)
    FAILED = "failed"  # the job itself broke (the agent crashed, the worker died too often)

    @property
    def finished(self) -> bool:
        return self in (JobStatus.DONE, JobStatus.FAILED)


@dataclass(frozen=True)
class JobSpec:
    """What identifies a job (task, agent, seed, strategy) plus what scoring needs about its task."""

    task_id: str
    agent: str
    seed: int = 0
    strategy: str = "single"
    category: str = "uncategorized"
    kind: TaskKind = TaskKind.TORCH_TO_KERNEL

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", TaskKind(self.kind))


@dataclass(frozen=True)
class AttemptUsage:
    """What one attempt cost the agent. None = not reported by the adapter (unknown, not zero)."""

    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    agent_steps: int | None = None
    wall_s: float | None = None


@dataclass(frozen=True)
class RunRecord:
    id: int
    created: str
    config: dict[str, Any]
    device: str | None
    versions: dict[str, str | None]
    confined: bool

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> RunRecord:
        return cls(id=row["id"], created=row["created"], config=json.loads(row["config"]), device=row["device"],
                   versions={"kernellab": row["kernellab_version"], "torch": row["torch_version"],
                             "triton": row["triton_version"]},
                   confined=bool(row["confined"]))


@dataclass(frozen=True)
class JobRecord:
    id: int
    run_id: int
    task_id: str
    agent: str
    seed: int
    strategy: str
    category: str
    kind: TaskKind
    status: JobStatus
    worker: str | None = None
    gpu: str | None = None
    worker_host: str | None = None
    worker_pid: int | None = None
    tries: int = 0
    started: str | None = None
    finished: str | None = None
    heartbeat: str | None = None
    error: str | None = None

    @property
    def key(self) -> str:
        return f"{self.task_id}|{self.agent}|{self.seed}|{self.strategy}"

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> JobRecord:
        return cls(id=row["id"], run_id=row["run_id"], task_id=row["task_id"], agent=row["agent"],
                   seed=row["seed"], strategy=row["strategy"], category=row["category"],
                   kind=TaskKind(row["kind"]), status=JobStatus(row["status"]), worker=row["worker"], gpu=row["gpu"],
                   worker_host=row["worker_host"], worker_pid=row["worker_pid"], tries=row["tries"],
                   started=row["started"], finished=row["finished"], heartbeat=row["heartbeat"],
                   error=row["error"])


@dataclass(frozen=True)
class AttemptRecord:
    id: int
    job_id: int
    iteration: int
    proposal_sha256: str | None
    artifact: str | None  # relative to the run directory
    usage: AttemptUsage
    created: str
    kept: bool
    final: bool
    note: str | None
    verdict_id: int | None = None
    verdict: Verdict | None = field(default=None, repr=False)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> AttemptRecord:
        verdict = row["verdict"]
        return cls(id=row["id"], job_id=row["job_id"], iteration=row["iteration"],
                   proposal_sha256=row["proposal_sha256"], artifact=row["artifact"],
                   usage=AttemptUsage(tokens_in=row["tokens_in"], tokens_out=row["tokens_out"],
                                      cost_usd=row["cost_usd"], agent_steps=row["agent_steps"],
                                      wall_s=row["wall_s"]),
                   created=row["created"], kept=bool(row["kept"]), final=bool(row["final"]), note=row["note"],
                   verdict_id=row["verdict_id"], verdict=Verdict.from_json(verdict) if verdict is not None else None)


# Event kinds the campaign's re-timing of finalists records (``run.scheduler``) and reports read:
# one per round as it ends, then one summary per job (geometric mean, 95% interval, the samples).
RETIME_SAMPLE = "retime_sample"
RETIME = "retime"


@dataclass(frozen=True)
class EventRecord:
    id: int
    job_id: int
    created: str
    kind: str
    payload: dict[str, Any]

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> EventRecord:
        return cls(id=row["id"], job_id=row["job_id"], created=row["created"], kind=row["kind"],
                   payload=json.loads(row["payload"]))
