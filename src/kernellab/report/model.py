"""What a report shows about one run directory: its runs (device, versions, confinement), one row per
job, the score layer's summary and per-agent breakdowns.

Every number comes from ``kernellab.score``; this layer selects and formats, it does not score.
``TaskRow.to_dict`` and ``RunReport`` keep their keys stable: the JSON form is read by CI jobs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from kernellab.score import Result, arena_points, gain_points
from kernellab.score.jsonable import json_ready
from kernellab.score.records import AttemptPoint

# Version of the JSON documents this package writes (report, compare, leaderboard). A change that
# renames or removes a key is a new version; adding a key is not.
REPORT_SCHEMA = 1
# Result fields computed here rather than copied (kind as its value, tokens as a sum).
_RESULT_FIELDS = {f.name for f in fields(Result)} - {"kind", "tokens"}


class ReportError(ValueError):
    """A run directory cannot be reported on as asked (one line, meant for the user)."""


@dataclass(frozen=True)
class RunInfo:
    """One run of a run directory: where and how it was made."""

    run_id: int
    created: str
    device: str | None  # what the run recorded, else the device its verdicts name
    versions: dict[str, str | None]
    confined: bool
    modes: tuple[str, ...] = ()  # evaluation modes of its verdicts: "gpu", "interpret", "compile-only"
    unfinished: int = 0  # jobs still pending or running: not reported

    def to_dict(self) -> dict[str, Any]:
        return json_ready(asdict(self))


@dataclass(frozen=True)
class TaskRow:
    """One job of a run: its scoring verdict reduced to the numbers a report lists."""

    run_id: int
    task_id: str
    category: str
    kind: str
    agent: str
    seed: int
    strategy: str
    status: str
    scored: bool
    compiled: bool
    correct: bool
    holdout_correct: bool | None
    speedup_vs_eager: float | None
    speedup_vs_compile: float | None
    speedup_vs_baseline: float | None
    holdout_speedup_vs_eager: float | None
    pct_of_roofline: float | None
    peak_mem_bytes: int | None
    tokens_in: int | None
    tokens_out: int | None
    tokens: int | None
    steps: int | None
    cost_usd: float | None
    wall_s: float | None
    attempts: int
    arena_points: float | None  # None for an unscored result (left out of every mean)
    gain_points: float | None
    confined: bool
    # The campaign's re-timing of its finalists (``kernellab run --retime-rounds``): the geometric
    # mean of the rounds' speedups vs eager and their 95% interval; None where none was made.
    retimed_speedup_vs_eager: float | None = None
    retimed_ci95: tuple[float, float] | None = None
    retimed_rounds: int = 0

    @classmethod
    def from_result(cls, result: Result, run: RunInfo) -> TaskRow:
        """Every field a ``Result`` has under the same name is taken on by name (so a field added to
        both is carried without another hand-written copy); the rest is said here."""
        shared = {f.name: getattr(result, f.name) for f in fields(cls) if f.name in _RESULT_FIELDS}
        return cls(**shared, run_id=run.run_id, kind=result.kind.value, scored=result.scored,
                   holdout_speedup_vs_eager=result.holdout_speedup, tokens=result.tokens,
                   arena_points=arena_points(result) if result.scored else None,
                   gain_points=gain_points(result) if result.scored else None, confined=run.confined)

    @property
    def key(self) -> tuple[str, str, int, str]:
        return (self.task_id, self.agent, self.seed, self.strategy)

    def speedup(self, vs: str) -> float | None:
        return getattr(self, f"speedup_vs_{vs}")

    def to_dict(self) -> dict[str, Any]:
        return json_ready(asdict(self))


@dataclass(frozen=True)
class RunReport:
    """Everything the report of one run directory shows."""

    run_dir: Path
    runs: tuple[RunInfo, ...]
    results: tuple[Result, ...]
    attempts: tuple[AttemptPoint, ...]
    rows: tuple[TaskRow, ...]
    summary: dict[str, Any]
    breakdowns: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.run_dir.resolve().name or str(self.run_dir)

    @property
    def devices(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.device for r in self.runs if r.device))

    @property
    def device_label(self) -> str:
        return " / ".join(self.devices) or "unknown device"

    @property
    def modes(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m for r in self.runs for m in r.modes))

    @property
    def versions(self) -> dict[str, str]:
        """Versions across the runs; a package recorded with several versions lists them all."""
        out: dict[str, list[str]] = {}
        for run in self.runs:
            for package, version in run.versions.items():
                if version and version not in out.setdefault(package, []):
                    out[package].append(version)
        return {k: " / ".join(v) for k, v in out.items() if v}

    @property
    def confined(self) -> bool:
        """True only when every run was confined (an empty directory has nothing unconfined)."""
        return all(r.confined for r in self.runs)

    @property
    def unfinished(self) -> int:
        return sum(r.unfinished for r in self.runs)

    @property
    def timed(self) -> bool:
        """Whether anything was timed: a CPU or interpreter run has no speedups at all."""
        return any(row.speedup(vs) is not None for row in self.rows for vs in ("eager", "compile", "baseline"))

    @property
    def agents(self) -> tuple[str, ...]:
        return tuple(sorted({row.agent for row in self.rows}))

    @property
    def categories(self) -> tuple[str, ...]:
        return tuple(sorted({row.category for row in self.rows}))

    def meta(self) -> dict[str, Any]:
        """The header every format prints: where the numbers come from."""
        return {"run_dir": str(self.run_dir), "name": self.name, "devices": list(self.devices),
                "modes": list(self.modes), "versions": self.versions, "confined": self.confined,
                "timed": self.timed, "unfinished": self.unfinished, "runs": [r.to_dict() for r in self.runs]}
