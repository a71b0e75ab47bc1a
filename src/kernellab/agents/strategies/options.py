"""Options shared by the search strategies (best-of-n, keep-revert, evolve): stop rules, the keep
margin, and the LLM verifier's pre-filter (on when ``verifier_model`` is given)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from kernellab.agents.base import Budget
from kernellab.agents.strategies.base import Strategy, StrategyOptions
from kernellab.agents.strategies.stopping import SPEEDUP_REFERENCES, StopRules
from kernellab.agents.strategies.verifier import VerifierOptions


@dataclass(frozen=True)
class SearchOptions(StrategyOptions):
    patience: int | None = None  # stop after this many proposals in a row that were not kept
    target_speedup: float | None = None  # stop once the best kernel is this fast vs target_vs
    target_vs: str = "eager"  # eager | compile | baseline
    target_roofline_pct: float | None = None  # stop once the best kernel reaches this % of the roofline
    min_gain: float = 0.01  # keep only kernels faster by this fraction beyond the timing CIs
    verifier_model: str | None = None  # turns the LLM verifier's pre-filter on
    verifier_provider: str = "openai"
    verifier_base_url: str | None = None
    verifier_api_key_env: str | None = None
    verifier_threshold: float = 0.5
    verifier_audit: float = 0.0
    verifier_timeout_s: float = 60.0
    verifier_price_in_per_mtok: float | None = None
    verifier_price_out_per_mtok: float | None = None

    def __post_init__(self) -> None:
        if self.patience is not None and self.patience < 1:
            raise ValueError("patience must be at least 1")
        if self.target_vs not in SPEEDUP_REFERENCES:
            raise ValueError(f"target_vs must be one of {', '.join(SPEEDUP_REFERENCES)}, not {self.target_vs!r}")
        for name in ("target_speedup", "target_roofline_pct"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ValueError(f"{name} must be positive")
        if self.min_gain < 0:
            raise ValueError("min_gain must not be negative")
        if self.verifier_model is not None:
            self.verifier()  # its own checks, now rather than mid-run

    def verifier(self) -> VerifierOptions | None:
        if not self.verifier_model:
            return None
        return VerifierOptions(provider=self.verifier_provider, model=self.verifier_model,
                               base_url=self.verifier_base_url, api_key_env=self.verifier_api_key_env,
                               threshold=self.verifier_threshold, audit=self.verifier_audit,
                               timeout_s=self.verifier_timeout_s, price_in_per_mtok=self.verifier_price_in_per_mtok,
                               price_out_per_mtok=self.verifier_price_out_per_mtok)


class SearchStrategy(Strategy):
    """A strategy of several proposals: its options carry stop rules and the verifier."""

    Options: ClassVar[type[StrategyOptions]] = SearchOptions
    options: SearchOptions

    def stop_rules(self, budget: Budget) -> StopRules:
        o = self.options
        return StopRules(budget=budget, patience=o.patience, target_speedup=o.target_speedup, target_vs=o.target_vs,
                         target_roofline_pct=o.target_roofline_pct)

    def verifier_options(self) -> VerifierOptions | None:
        return self.options.verifier()
