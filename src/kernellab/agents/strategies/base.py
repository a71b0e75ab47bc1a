"""What a strategy is, how it is registered, and how its options are read.

A strategy decides how proposals are combined into one answer: which kernel the next proposal
starts from, what it is asked to do, what is kept, and when to stop. It works through a
:class:`~kernellab.agents.strategies.context.SearchContext` (propose, evaluate, record, stop rules)
and returns the kernel that gets the final verdict. Strategies register with
``@register_strategy("name")`` and take their options as keyword arguments, read into a frozen
dataclass (``Options``); options given as text (``--strategy-option n=8``) are converted by the
field's type.
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from kernellab.agents.base import AgentError, Budget, parse_flag, parse_number
from kernellab.registry import Registry

if TYPE_CHECKING:
    from kernellab.agents.strategies.context import Candidate, SearchContext
    from kernellab.agents.strategies.stopping import Stop, StopRules
    from kernellab.agents.strategies.verifier import VerifierOptions


class StrategyError(AgentError):
    """A strategy that cannot run as asked (unknown name, bad option): one line for the user."""


@dataclass(frozen=True)
class StrategyOptions:
    """Options every strategy takes (none); search strategies extend it."""


@dataclass(frozen=True)
class StrategyOutcome:
    """What a strategy ends with: the kernel to judge in full (``None``: the strategy has no correct
    kernel; the caller then picks the best attempt it saw) and why the search stopped."""

    answer: Candidate | None
    stop: Stop
    summary: str = ""


class Strategy(abc.ABC):
    name: ClassVar[str] = ""
    Options: ClassVar[type[StrategyOptions]] = StrategyOptions
    # The most proposals the strategy ever makes, whatever the budget (None: as many as the budget allows)
    proposals_at_most: ClassVar[int | None] = None

    def __init__(self, **options: Any) -> None:
        self.options = parse_options(self.Options, self.name, options)

    @abc.abstractmethod
    def run(self, ctx: SearchContext) -> StrategyOutcome:
        """Propose, evaluate and decide through ``ctx`` until done or a stop rule fires."""

    def stop_rules(self, budget: Budget) -> StopRules:
        from kernellab.agents.strategies.stopping import StopRules

        return StopRules(budget=budget)

    def verifier_options(self) -> VerifierOptions | None:
        return None

    def options_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self.options)


STRATEGIES: Registry[Strategy, type[Strategy]] = Registry("strategy", "kernellab.agents.strategies")
register_strategy = STRATEGIES.register


def max_proposals(name: str) -> int | None:
    """``proposals_at_most`` of the registered strategy ``name`` (None for an unknown name too)."""
    cls = STRATEGIES.entries().get(name)
    return cls.proposals_at_most if cls is not None else None


def registered_strategies() -> dict[str, type[Strategy]]:
    """Every strategy, by name (importing the package registers the built-in ones)."""
    return STRATEGIES.entries()


def create_strategy(name: str, **options: Any) -> Strategy:
    strategies = registered_strategies()
    if name not in strategies:
        raise StrategyError(f"unknown strategy {name!r}; known: {', '.join(strategies)}")
    return strategies[name](**options)


# ------------------------------------------------------------------------------------ options


def option_names(cls: type[StrategyOptions]) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def parse_options(cls: type[StrategyOptions], strategy: str, given: dict[str, Any]) -> StrategyOptions:
    """``given`` read into ``cls``: unknown names and values of the wrong type are one-line errors."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        known = ", ".join(fields) or "none"
        raise StrategyError(f"strategy {strategy}: unknown option {', '.join(map(repr, unknown))}; "
                            f"its options: {known}")
    values = {name: _convert(strategy, name, str(fields[name].type), value) for name, value in given.items()}
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise StrategyError(f"strategy {strategy}: {exc}") from None


def _convert(strategy: str, name: str, annotation: str, value: Any) -> Any:
    optional = "None" in annotation
    base = annotation.replace("| None", "").replace("None |", "").strip()

    def bad(kind: str) -> StrategyError:
        return StrategyError(f"strategy {strategy}: option {name} must be {kind}, not {value!r}")

    if value is None or (isinstance(value, str) and value.strip().lower() in ("none", "null", "")):
        if optional:
            return None
        raise bad(f"a value of type {base}")
    if base == "bool":
        flag = parse_flag(value)
        if flag is None:
            raise bad("true or false")
        return flag
    if base in ("int", "float"):
        try:
            return parse_number(value, whole=base == "int")
        except ValueError as exc:
            raise bad(str(exc)) from None
    if base == "str":
        if not isinstance(value, str):
            raise bad("text")
        return value.strip()
    return value
