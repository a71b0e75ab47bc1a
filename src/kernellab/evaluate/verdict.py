"""The verdict: the one record a candidate's evaluation produces (Contract 3 of ARCHITECTURE.md).

Everything a user or a later layer sees is ``Verdict.to_json()``; no other code assembles that
document, and ``Verdict.from_json()`` (or ``from_dict``) reads it back into the same records, so a
layer above (the results store, scoring, progress, strategies) reads typed fields, never string keys.
Status, stage and violation vocabularies are closed enums so a typo cannot invent one; each record's
``__post_init__`` ties its fields to its status (a stage that failed has no ``skipped`` reason, a
passed verdict is correct and names no failed stage, timings exist only for a kernel that compiled), as
FlashInfer-Bench's trace records do, so a malformed document fails where it is read.
"""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

SCHEMA = 1

PHASES = ("forward", "forward+backward")


class Status(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    NEEDS_GPU = "needs_gpu"
    UNSUPPORTED_IN_INTERPRETER = "unsupported_in_interpreter"
    TIMEOUT = "timeout"
    HARNESS_ERROR = "harness_error"


# Statuses that say nothing about the candidate: the evaluation could not be carried out here (no
# GPU, an interpreter gap, a bug in kernellab). Scoring leaves them out of every rate and mean.
UNSCORED = frozenset({Status.NEEDS_GPU, Status.UNSUPPORTED_IN_INTERPRETER, Status.HARNESS_ERROR})


class Stage(str, enum.Enum):
    STATIC = "static"
    LOAD = "load"
    SMOKE = "smoke"
    SHAPE_SWEEP = "shape_sweep"
    STABILITY = "stability"
    DETERMINISM = "determinism"
    EDGE = "edge"
    BACKWARD = "backward"
    SANITIZE = "sanitize"
    TIMING = "timing"
    HOLDOUT = "holdout"


class ViolationKind(str, enum.Enum):
    POLICY = "policy"
    ALLOCATOR_REUSE = "allocator_reuse"
    OUTPUT_CACHE = "output_cache"
    INPUT_MUTATION = "input_mutation"
    REFERENCE_READ = "reference_read"
    DEFERRED_RESULT = "deferred_result"
    SIDE_STREAM = "side_stream"
    TIMER_TAMPER = "timer_tamper"
    PRECISION = "precision"
    OUTPUT_CONTRACT = "output_contract"
    PHASE_DETECTION = "phase_detection"
    PROCESS_ESCAPE = "process_escape"
    MEMORY_SAFETY = "memory_safety"
    RACE = "race"


# Kinds that say how an output is wrong, not that the candidate cheated: an output that holds memory
# the candidate never wrote, an error the size of a lower precision's. Where outputs are wrong anyway
# they describe the failure; on holdout configs that failure is the holdout's (exit status 3).
WRONG_OUTPUT_KINDS = frozenset({ViolationKind.ALLOCATOR_REUSE, ViolationKind.PRECISION})


class Mode(str, enum.Enum):
    GPU = "gpu"
    INTERPRET = "interpret"
    COMPILE_ONLY = "compile-only"


@dataclass
class Violation:
    kind: ViolationKind
    detail: str

    def __post_init__(self) -> None:
        self.kind = ViolationKind(self.kind)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "detail": self.detail}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Violation:
        return cls(ViolationKind(d["kind"]), str(d.get("detail", "")))


@dataclass
class ConfigCheck:
    config: str
    dtype: str
    max_abs_err: float | None
    max_rel_err: float | None
    tolerance: float | None
    passed: bool = True
    note: str | None = None


@dataclass
class StageResult:
    name: Stage
    passed: bool
    seconds: float = 0.0
    configs: list[ConfigCheck] = field(default_factory=list)
    error: str | None = None
    skipped: str | None = None  # why a stage did not run (e.g. "no backward in this task")

    def __post_init__(self) -> None:
        self.name = Stage(self.name)
        if self.skipped is not None and not self.passed:
            raise ValueError(f"stage {self.name.value}: a skipped stage cannot have failed")

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StageResult:
        return cls(Stage(d["name"]), bool(d["passed"]), float(d.get("seconds") or 0.0),
                   [ConfigCheck(**c) for c in d.get("configs") or []], d.get("error"), d.get("skipped"))

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name.value, "passed": self.passed, "seconds": round(self.seconds, 4),
                "configs": [_clean(asdict(c)) for c in self.configs], "error": self.error,
                "skipped": self.skipped}


@dataclass
class Timing:
    config: str
    dtype: str
    phase: str  # "forward" | "forward+backward"
    method: str  # "events" | "graph"
    samples: int
    candidate_us: float
    ci95_us: tuple[float, float]
    eager_us: float | None = None
    compile_us: float | None = None
    baseline_us: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    speedup_vs_baseline: float | None = None
    achieved_gbps: float | None = None
    achieved_tflops: float | None = None
    pct_of_roofline: float | None = None
    peak_mem_bytes: int | None = None
    eager_peak_mem_bytes: int | None = None  # the eager reference's, measured where the timing runs
    # A traced row's: device µs per call of the candidate's kernels in its traced rounds (from the
    # trace), which must stay near ``candidate_us``; how near it stays for honest kernels is evidence too.
    traced_device_us: float | None = None

    def __post_init__(self) -> None:
        self.ci95_us = tuple(self.ci95_us)
        if self.phase not in PHASES:
            raise ValueError(f"timing {self.config}: unknown phase {self.phase!r}; expected one of {PHASES}")
        if len(self.ci95_us) != 2:
            raise ValueError(f"timing {self.config}: ci95_us is a (low, high) pair")

    def to_dict(self) -> dict[str, Any]:
        d = _clean(asdict(self))
        d["ci95_us"] = list(self.ci95_us)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Timing:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})


@dataclass
class HoldoutResult:
    correct: bool | None = None
    failed_configs: list[str] = field(default_factory=list)
    speedup: dict[str, float | None] = field(default_factory=dict)
    timings: list[Timing] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"correct": self.correct, "failed_configs": self.failed_configs,
                "speedup": self.speedup, "timings": [t.to_dict() for t in self.timings]}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> HoldoutResult:
        d = d or {}
        return cls(d.get("correct"), list(d.get("failed_configs") or []), dict(d.get("speedup") or {}),
                   [Timing.from_dict(t) for t in d.get("timings") or []])


@dataclass
class Verdict:
    task: dict[str, str]
    candidate: dict[str, str]
    device: str
    mode: Mode
    versions: dict[str, str]
    policy: str
    seed: int
    status: Status = Status.FAILED
    compiled: bool = False
    correct: bool = False
    failed_stage: Stage | None = None
    error: str | None = None
    stages: list[StageResult] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    timings: list[Timing] = field(default_factory=list)
    compile_seconds: float | None = None
    speedup: dict[str, float | None] = field(default_factory=lambda: {
        "vs_eager": None, "vs_compile": None, "vs_baseline": None})
    holdout: HoldoutResult = field(default_factory=HoldoutResult)
    elapsed_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.mode, self.status = Mode(self.mode), Status(self.status)
        self.failed_stage = None if self.failed_stage is None else Stage(self.failed_stage)
        if self.correct and not self.compiled:
            raise ValueError("a verdict cannot be correct without having compiled")
        if self.status is Status.PASSED and (not self.correct or self.failed_stage is not None):
            raise ValueError("a passed verdict is correct and names no failed stage")
        if not self.compiled and (self.timings or any(v is not None for v in self.speedup.values())):
            raise ValueError("a verdict has timings and speedups only when its kernel compiled")

    @property
    def speedup_vs_eager(self) -> float | None:
        return self.speedup.get("vs_eager")

    @property
    def forward_timings(self) -> list[Timing]:
        """The forward rows (all rows when a task times only forward+backward)."""
        return [t for t in self.timings if t.phase == "forward"] or self.timings

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA, "task": self.task, "candidate": self.candidate, "device": self.device,
            "mode": self.mode.value, "versions": self.versions, "policy": self.policy, "seed": self.seed,
            "status": self.status.value, "compiled": self.compiled, "correct": self.correct,
            "failed_stage": self.failed_stage.value if self.failed_stage else None, "error": self.error,
            "stages": [s.to_dict() for s in self.stages],
            "violations": [v.to_dict() for v in self.violations],
            "timings": [t.to_dict() for t in self.timings],
            "compile_seconds": _round(self.compile_seconds), "speedup": self.speedup,
            "holdout": self.holdout.to_dict(), "elapsed_s": round(self.elapsed_s, 3), "notes": self.notes,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, allow_nan=False, default=str)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Verdict:
        """The verdict a ``to_dict()`` document describes. Keys an older document lacks take their
        defaults; a key with a value outside its vocabulary raises ``ValueError``."""
        if not isinstance(d.get("status"), str):
            raise ValueError("a verdict document needs a 'status'")
        speedup = {"vs_eager": None, "vs_compile": None, "vs_baseline": None, **(d.get("speedup") or {})}
        return cls(task=dict(d.get("task") or {}), candidate=dict(d.get("candidate") or {}),
                   device=str(d.get("device") or ""), mode=Mode(d.get("mode") or Mode.GPU.value),
                   versions=dict(d.get("versions") or {}), policy=str(d.get("policy") or ""),
                   seed=int(d.get("seed") or 0), status=Status(d["status"]),
                   compiled=bool(d.get("compiled", d.get("correct"))),  # an absent key is no contradiction
                   correct=bool(d.get("correct")), failed_stage=d.get("failed_stage"), error=d.get("error"),
                   stages=[StageResult.from_dict(x) for x in d.get("stages") or []],
                   violations=[Violation.from_dict(x) for x in d.get("violations") or []],
                   timings=[Timing.from_dict(x) for x in d.get("timings") or []],
                   compile_seconds=d.get("compile_seconds"), speedup=speedup,
                   holdout=HoldoutResult.from_dict(d.get("holdout")), elapsed_s=float(d.get("elapsed_s") or 0.0),
                   notes=list(d.get("notes") or []))

    @classmethod
    def from_json(cls, text: str) -> Verdict:
        return cls.from_dict(json.loads(text))

    @property
    def exit_code(self) -> int:
        """0 passed, 1 failed, 3 seen configs passed but holdout failed (2 is the CLI's: unusable call)."""
        if self.status is Status.PASSED:
            return 3 if self.holdout.correct is False else 0
        return 1

    def violation_kinds(self) -> set[str]:
        return {v.kind.value for v in self.violations}


def _round(x: float | None, nd: int = 4) -> float | None:
    return None if x is None else round(x, nd)


def _clean(d: dict[str, Any]) -> dict[str, Any]:
    """Replace non-finite floats (not valid JSON) by None and round the rest for readability."""
    out = {}
    for k, v in d.items():
        if isinstance(v, float):
            out[k] = None if v != v or v in (float("inf"), float("-inf")) else v
        else:
            out[k] = v
    return out


@dataclass(frozen=True)
class VerdictSummary:
    """The short record of a verdict that check logs and trajectories keep (``to_dict`` is what they
    write, ``from_dict`` reads a line back)."""

    status: Status
    compiled: bool
    correct: bool
    failed_stage: Stage | None = None
    error: str | None = None
    violations: tuple[str, ...] = ()
    speedup: dict[str, float | None] = field(default_factory=dict)
    mode: Mode = Mode.GPU
    compile_seconds: float | None = None
    elapsed_s: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", Status(self.status))
        object.__setattr__(self, "mode", Mode(self.mode))
        if self.failed_stage is not None:
            object.__setattr__(self, "failed_stage", Stage(self.failed_stage))
        if self.correct and not self.compiled:
            raise ValueError("a verdict cannot be correct without having compiled")

    @classmethod
    def of(cls, verdict: Verdict, clip=lambda text: text) -> VerdictSummary:
        return cls(verdict.status, verdict.compiled, verdict.correct, verdict.failed_stage,
                   clip(verdict.error) if verdict.error else None, tuple(sorted(verdict.violation_kinds())),
                   dict(verdict.speedup), verdict.mode, verdict.compile_seconds, round(verdict.elapsed_s, 3))

    @property
    def scored(self) -> bool:
        return self.status not in UNSCORED

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status.value, "compiled": self.compiled, "correct": self.correct,
                "failed_stage": self.failed_stage.value if self.failed_stage else None, "error": self.error,
                "violations": list(self.violations), "speedup": dict(self.speedup), "mode": self.mode.value,
                "compile_seconds": self.compile_seconds, "elapsed_s": self.elapsed_s}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> VerdictSummary:
        return cls(Status(d["status"]), bool(d.get("compiled", d.get("correct"))), bool(d.get("correct")),
                   d.get("failed_stage"),
                   d.get("error"), tuple(d.get("violations") or ()), dict(d.get("speedup") or {}),
                   Mode(d.get("mode") or Mode.GPU.value), d.get("compile_seconds"), float(d.get("elapsed_s") or 0.0))
