"""The verdict: the one record a candidate's evaluation produces (Contract 3 of ARCHITECTURE.md).

Everything a user or a later layer sees is ``Verdict.to_json()``; no other code assembles that
document. Status, stage and violation vocabularies are closed enums so a typo cannot invent one.
"""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field
from typing import Any

SCHEMA = 1


class Status(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    NEEDS_GPU = "needs_gpu"
    UNSUPPORTED_IN_INTERPRETER = "unsupported_in_interpreter"
    TIMEOUT = "timeout"
    HARNESS_ERROR = "harness_error"


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


class Mode(str, enum.Enum):
    GPU = "gpu"
    INTERPRET = "interpret"
    COMPILE_ONLY = "compile-only"


@dataclass
class Violation:
    kind: ViolationKind
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "detail": self.detail}


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

    def to_dict(self) -> dict[str, Any]:
        d = _clean(asdict(self))
        d["ci95_us"] = list(self.ci95_us)
        return d


@dataclass
class HoldoutResult:
    correct: bool | None = None
    failed_configs: list[str] = field(default_factory=list)
    speedup: dict[str, float | None] = field(default_factory=dict)
    timings: list[Timing] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"correct": self.correct, "failed_configs": self.failed_configs,
                "speedup": self.speedup, "timings": [t.to_dict() for t in self.timings]}


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
