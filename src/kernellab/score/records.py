"""The records scoring works on: one ``Result`` per (task, agent, seed, strategy) final verdict and one
``AttemptPoint`` per recorded attempt (for per-iteration curves).

They are plain frozen dataclasses so the formulas are pure functions over values a test can write by
hand; ``kernellab.score.from_store`` builds them from a run's results store.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from kernellab.evaluate.verdict import UNSCORED


class TaskKind(str, enum.Enum):
    """A task with a baseline kernel is kernel→kernel (improve a kernel); otherwise torch→kernel."""

    TORCH_TO_KERNEL = "torch->kernel"
    KERNEL_TO_KERNEL = "kernel->kernel"

    @classmethod
    def of(cls, has_baseline: bool) -> TaskKind:
        return cls.KERNEL_TO_KERNEL if has_baseline else cls.TORCH_TO_KERNEL


# Verdict statuses that say nothing about the candidate (``evaluate.verdict.UNSCORED``): left out of
# every rate and mean, and counted as ``n_unscored``, so a CPU run is not charged with failures that
# are not the agent's.
UNSCORED_STATUSES = UNSCORED

# Status of a finished job that left no verdict at all (the agent produced no kernel): a failure.
NO_CANDIDATE = "no_candidate"

SPEEDUP_REFERENCES = ("eager", "compile", "baseline")


@dataclass(frozen=True)
class Result:
    """The final verdict of one job, reduced to what scoring needs.

    Speedups are geometric means over seen configs × dtypes (forward), as the verdict reports them;
    ``seen_speedups`` keeps the per-config values vs eager. ``holdout_speedup`` is vs eager (holdout
    configs are not timed against ``torch.compile``). Cost fields add up every attempt of the job.
    """

    task_id: str
    agent: str = "agent"
    seed: int = 0
    strategy: str = "single"
    category: str = "uncategorized"
    kind: TaskKind = TaskKind.TORCH_TO_KERNEL
    status: str = "failed"
    compiled: bool = False
    correct: bool = False
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    speedup_vs_baseline: float | None = None
    holdout_correct: bool | None = None
    holdout_speedup: float | None = None
    seen_speedups: tuple[float, ...] = field(default_factory=tuple)
    pct_of_roofline: float | None = None
    peak_mem_bytes: int | None = None
    peak_mem_ratio: float | None = None  # candidate peak / eager peak, when both were measured
    wall_s: float | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    steps: int | None = None
    cost_usd: float | None = None
    attempts: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", TaskKind(self.kind))
        if self.correct and not self.compiled:
            raise ValueError(f"{self.task_id}: a result cannot be correct without having compiled")

    @property
    def scored(self) -> bool:
        return self.status not in UNSCORED_STATUSES

    @property
    def tokens(self) -> int | None:
        if self.tokens_in is None and self.tokens_out is None:
            return None
        return (self.tokens_in or 0) + (self.tokens_out or 0)

    def speedup(self, vs: str) -> float | None:
        """Speedup vs ``"eager"``, ``"compile"`` or ``"baseline"``."""
        if vs not in SPEEDUP_REFERENCES:
            raise ValueError(f"unknown speedup reference {vs!r}; expected one of {SPEEDUP_REFERENCES}")
        return getattr(self, f"speedup_vs_{vs}")

    @property
    def start_speedup(self) -> float | None:
        """Speedup over what the agent started from: the baseline kernel in a kernel→kernel task,
        eager PyTorch in a torch→kernel task (AgentKernelArena's ``speedup_ratio``)."""
        if self.kind is TaskKind.KERNEL_TO_KERNEL:
            return self.speedup_vs_baseline
        return self.speedup_vs_eager


@dataclass(frozen=True)
class AttemptPoint:
    """One attempt of one job at one iteration, for per-iteration curves."""

    job: str
    iteration: int
    compiled: bool
    correct: bool
    speedup: float | None = None  # vs eager, seen configs
    status: str = "failed"

    @property
    def scored(self) -> bool:
        return self.status not in UNSCORED_STATUSES
