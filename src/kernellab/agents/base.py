"""The one interface every agent implements, and the records that cross it.

An agent is a *proposer*: given a workspace (the task's public files and the kernel in hand) and
feedback on the last attempt, it returns a new kernel source and what producing it cost. Whole CLI
agents (Claude Code, Codex, Cursor) iterate inside one proposal with ``check``; strategies
(``agents.strategies``) decide how proposals are combined (one shot, best of n, keep/revert,
evolution) and the judge's verdict decides what is kept. Agents never see a verdict of holdout
configs, and never judge themselves.
"""

from __future__ import annotations

import abc
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from kernellab.registry import Registry


class AgentError(Exception):
    """An agent that cannot run here (CLI missing, no key, bad option): one line for the user."""


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")


def parse_flag(value: Any) -> bool | None:
    """An on/off option given as a bool or as text (``--agent-option screen=off``); None when neither."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    return True if text in _TRUE else False if text in _FALSE else None


def parse_number(value: Any, whole: bool = False) -> int | float:
    """A number option given as a number or as text (``--agent-option max_steps=20``); ValueError
    whose text says what it must be ("a number", "a whole number") otherwise."""
    if isinstance(value, bool):
        raise ValueError("a number")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("a number") from None
    if not whole:
        return number
    if not math.isfinite(number) or number != int(number):
        raise ValueError("a whole number")
    return int(number)


@dataclass(frozen=True)
class Budget:
    """Limits of one solve: wall seconds, money, iterations (proposals); ``None`` = unlimited.

    Parsed from the CLI's ``--budget`` text: ``30m``, ``90s``, ``2h``, ``$5``, ``50it``, or several
    joined by commas (``30m,$5``); the first limit reached stops the run.
    """

    seconds: float | None = None
    dollars: float | None = None
    iterations: int | None = None

    _UNITS: ClassVar[dict[str, float]] = {"s": 1.0, "m": 60.0, "h": 3600.0}

    @classmethod
    def parse(cls, text: str | None) -> Budget:
        if not text:
            return cls()
        seconds = dollars = iterations = None
        for part in (p.strip() for p in text.split(",") if p.strip()):
            if m := re.fullmatch(r"(\d+(?:\.\d+)?)([smh])", part):
                seconds = float(m.group(1)) * cls._UNITS[m.group(2)]
            elif m := re.fullmatch(r"\$(\d+(?:\.\d+)?)", part):
                dollars = float(m.group(1))
            elif m := re.fullmatch(r"(\d+)\s*it", part):
                iterations = int(m.group(1))
            else:
                raise AgentError(f"--budget {part!r} is not understood: use e.g. 30m, 90s, 2h, $5, 50it "
                                 f"or several joined by commas")
        return cls(seconds, dollars, iterations)

    def __str__(self) -> str:
        parts = []
        if self.seconds is not None:
            parts.append(f"{self.seconds:g}s")
        if self.dollars is not None:
            parts.append(f"${self.dollars:g}")
        if self.iterations is not None:
            parts.append(f"{self.iterations}it")
        return ",".join(parts) or "unlimited"


@dataclass
class Usage:
    """What one proposal cost, as far as the agent reports it (``None``: not reported)."""

    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    steps: int = 0  # agent turns or tool calls
    wall_s: float = 0.0

    def add(self, other: Usage) -> Usage:
        def plus(a, b):
            return b if a is None else a if b is None else a + b

        return Usage(plus(self.tokens_in, other.tokens_in), plus(self.tokens_out, other.tokens_out),
                     plus(self.cost_usd, other.cost_usd), self.steps + other.steps, self.wall_s + other.wall_s)


@dataclass(frozen=True)
class ProposalRequest:
    """What a proposer gets for one proposal.

    ``workspace`` holds TASK.md, reference.py and kernel.py (the kernel in hand: ``parent``, written
    there before the call) plus the ``check`` command; ``feedback`` is the compact text of the last
    verdict on seen configs; ``instructions`` is what the strategy asks for this time (a mutation,
    a crossover of ``others``); ``deadline_s`` is the wall time this proposal may take.
    """

    workspace: Path
    task_id: str
    iteration: int
    parent: str
    feedback: str | None = None
    instructions: str | None = None
    others: tuple[str, ...] = ()
    deadline_s: float | None = None
    seed: int = 0


@dataclass
class Proposal:
    """A kernel source (``None``: the agent produced none) and what producing it cost."""

    source: str | None
    usage: Usage = field(default_factory=Usage)
    note: str = ""  # the agent's own summary, or why it produced nothing
    log_path: Path | None = None  # the agent's transcript (stream-json, tool calls)
    timed_out: bool = False


@dataclass(frozen=True)
class Availability:
    usable: bool
    why: str  # "claude 2.1.3 at /usr/bin/claude" or "claude not found on PATH"


class Agent(abc.ABC):
    """A proposer. Subclasses register with ``@register("name")`` and take their options as
    keyword arguments (model, temperature, command...), validated in ``__init__``."""

    name: ClassVar[str] = ""
    uses_llm: ClassVar[bool] = True

    @classmethod
    def availability(cls) -> Availability:
        """Whether this adapter can run on this machine, and why not (for ``kernellab agents list``)."""
        return Availability(True, "built in")

    @abc.abstractmethod
    def propose(self, request: ProposalRequest) -> Proposal:
        """Produce one kernel. Must return within ``request.deadline_s`` (kill what it started)."""

    def close(self) -> None:  # noqa: B027 - a default no-op; only adapters that hold something override it
        """Release what the agent holds (servers, sessions)."""


AGENTS: Registry[Agent, type[Agent]] = Registry("agent", "kernellab.agents.adapters")
register = AGENTS.register


def registered() -> dict[str, type[Agent]]:
    """Every agent adapter, by name (importing the adapters registers them)."""
    return AGENTS.entries()


def create_agent(name: str, **options: Any) -> Agent:
    agents = registered()
    if name not in agents:
        raise AgentError(f"unknown agent {name!r}; known: {', '.join(agents)}")
    return agents[name](**options)
