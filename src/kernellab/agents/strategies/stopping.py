"""When a search stops: budget (time, money, iterations), patience, and targets reached.

Each rule is a pure function of a :class:`StopState` (what the search has spent and found so far)
and returns a :class:`Stop` or ``None``; :class:`StopRules` checks them in a fixed order and reports
each rule's standing for a live display. The speed rules need timings: under the Triton interpreter
nothing is timed, so they never fire and report "not timed".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kernellab.agents.base import Budget
from kernellab.agents.strategies.compare import roofline_pct, speedup_vs
from kernellab.evaluate.verdict import Verdict

SPEEDUP_REFERENCES = ("eager", "compile", "baseline")


@dataclass(frozen=True)
class StopState:
    """What a search has spent and found. ``cost_usd`` adds the costs that were reported;
    ``cost_unknown`` says some proposal reported none. ``not_improved`` counts the proposals in a
    row, up to now, that did not become the new best (reverts, rejects, proposals with no kernel)."""

    iterations: int = 0
    elapsed_s: float = 0.0
    cost_usd: float = 0.0
    cost_unknown: bool = False
    not_improved: int = 0
    best: Verdict | None = None


@dataclass(frozen=True)
class Stop:
    rule: str  # iterations | time | cost | patience | roofline | speedup | done
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "reason": self.reason}


def iterations_stop(budget: Budget, state: StopState) -> Stop | None:
    if budget.iterations is not None and state.iterations >= budget.iterations:
        return Stop("iterations", f"iteration budget reached: {state.iterations} of {budget.iterations} proposals")
    return None


def time_stop(budget: Budget, state: StopState) -> Stop | None:
    if budget.seconds is not None and state.elapsed_s >= budget.seconds:
        return Stop("time", f"time budget reached: {state.elapsed_s:.0f} s of {budget.seconds:g} s")
    return None


def cost_stop(budget: Budget, state: StopState) -> Stop | None:
    if budget.dollars is not None and state.cost_usd >= budget.dollars:
        return Stop("cost", f"cost budget reached: ${state.cost_usd:.2f} of ${budget.dollars:g}")
    return None


def patience_stop(patience: int | None, state: StopState) -> Stop | None:
    if patience is not None and state.not_improved >= patience:
        return Stop("patience", f"{state.not_improved} proposals in a row were not kept (patience {patience})")
    return None


def roofline_stop(target_pct: float | None, state: StopState) -> Stop | None:
    pct = roofline_pct(state.best)
    if target_pct is not None and pct is not None and pct >= target_pct:
        return Stop("roofline", f"the best kernel reaches {pct:.1f}% of the roofline (target {target_pct:g}%)")
    return None


def speedup_stop(target: float | None, reference: str, state: StopState) -> Stop | None:
    speedup = speedup_vs(state.best, reference)
    if target is not None and speedup is not None and speedup >= target:
        return Stop("speedup", f"the best kernel is x{speedup:.2f} vs {reference} (target x{target:g})")
    return None


@dataclass(frozen=True)
class StopRules:
    budget: Budget = field(default_factory=Budget)
    patience: int | None = None
    target_speedup: float | None = None
    target_vs: str = "eager"
    target_roofline_pct: float | None = None

    def __post_init__(self) -> None:
        if self.target_vs not in SPEEDUP_REFERENCES:
            raise ValueError(f"target_vs must be one of {', '.join(SPEEDUP_REFERENCES)}, not {self.target_vs!r}")
        if self.patience is not None and self.patience < 1:
            raise ValueError("patience must be at least 1")

    def check(self, state: StopState) -> Stop | None:
        """The first rule that fires, in order: iterations, time, cost, patience, roofline, speedup."""
        return (iterations_stop(self.budget, state) or time_stop(self.budget, state) or cost_stop(self.budget, state)
                or patience_stop(self.patience, state) or roofline_stop(self.target_roofline_pct, state)
                or speedup_stop(self.target_speedup, self.target_vs, state))

    def time_left(self, state: StopState) -> float | None:
        return None if self.budget.seconds is None else max(0.0, self.budget.seconds - state.elapsed_s)

    def standing(self, state: StopState) -> dict[str, str]:
        """Each configured rule's standing, e.g. ``{"time": "12m left", "roofline": "not timed"}``."""
        out: dict[str, str] = {}
        b = self.budget
        if b.iterations is not None:
            out["iterations"] = f"{max(0, b.iterations - state.iterations)} of {b.iterations} left"
        if b.seconds is not None:
            out["time"] = f"{_duration(max(0.0, b.seconds - state.elapsed_s))} left"
        if b.dollars is not None:
            left = f"${max(0.0, b.dollars - state.cost_usd):.2f} left"
            out["cost"] = left + (" (some costs unknown)" if state.cost_unknown else "")
        if self.patience is not None:
            out["patience"] = f"{state.not_improved} of {self.patience} not kept in a row"
        if self.target_roofline_pct is not None:
            pct = roofline_pct(state.best)
            out["roofline"] = "not timed" if pct is None else f"{pct:.1f}% of {self.target_roofline_pct:g}%"
        if self.target_speedup is not None:
            s = speedup_vs(state.best, self.target_vs)
            out["speedup"] = "not timed" if s is None else f"x{s:.2f} of x{self.target_speedup:g} vs {self.target_vs}"
        return out


def _duration(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f}h"
    if seconds >= 120:
        return f"{seconds / 60:.0f}m"
    return f"{seconds:.0f}s"
