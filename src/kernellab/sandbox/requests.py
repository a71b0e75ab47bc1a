"""The judge's requests to a candidate child, as typed records.

Each record names one ``op_*`` method of the child's harness (``sandbox/child.py``) and holds its
arguments; ``to_message()`` is what goes over the channel (with a per-request token added by
``CandidateProcess``), ``from_message()`` reads such a message back into its record. The validators
refuse a request the harness could only fail on (an unknown timing method, a run with no calls), so
the mistake is the judge's and is raised where it is made. The child itself still reads plain
dictionaries: it runs next to the candidate, which must find no new objects of ours to patch.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from kernellab.sandbox.timing_stats import METHODS as TIMING_METHODS


@dataclass(frozen=True)
class ChildRequest:
    op: ClassVar[str]

    def arguments(self) -> dict[str, Any]:
        """The keyword arguments of the harness's ``op_<op>`` method."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def to_message(self) -> dict[str, Any]:
        return {"op": self.op, **self.arguments()}

    @staticmethod
    def from_message(message: dict[str, Any]) -> ChildRequest:
        kind = REQUESTS.get(message.get("op"))  # type: ignore[arg-type]
        if kind is None:
            raise ValueError(f"unknown child request {message.get('op')!r}; known: {', '.join(REQUESTS)}")
        return kind(**{k: v for k, v in message.items() if k not in ("op", "token")})


@dataclass(frozen=True)
class ImportRequest(ChildRequest):
    """Import the candidate file (from its current bytes) and find its model class."""

    op: ClassVar[str] = "import"
    path: str
    reference_class: bool = False  # the task's reference evaluated as its own candidate: its Model counts


@dataclass(frozen=True)
class InstantiateRequest(ChildRequest):
    """Build the candidate model for one config and dtype from the judge's init arguments and weights."""

    op: ClassVar[str] = "instantiate"
    key: str
    init_inputs: list[Any]
    seed: int
    state: dict[str, Any]
    dtype: str
    keep_dtype: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunRequest(ChildRequest):
    """Call the model on each of ``calls`` (checked calls: inputs, and for backward ``wrt`` and
    ``grad_outputs``), after poisoning the allocator with one block per expected output, given as
    ``(elements, dtype name)`` in ``poison_bytes`` (the harness's name for it)."""

    op: ClassVar[str] = "run"
    key: str
    calls: list[dict[str, Any]]
    poison_bytes: list[tuple[int, str]] = field(default_factory=list)
    profile: bool = False

    def __post_init__(self) -> None:
        if not self.calls:
            raise ValueError("a run request needs at least one call")
        blocks = [tuple(b) if isinstance(b, (list, tuple)) else (b,) for b in self.poison_bytes]
        if any(len(b) != 2 or not isinstance(b[0], int) or b[0] < 0 or not isinstance(b[1], str) for b in blocks):
            raise ValueError("poison_bytes holds (elements, dtype name) pairs")
        object.__setattr__(self, "poison_bytes", blocks)


@dataclass(frozen=True)
class TimeRoundRequest(ChildRequest):
    """One timing round on the judge's slots, timed with ``method``."""

    op: ClassVar[str] = "time_round"
    key: str
    row: str
    slots: list[dict[str, Any]]
    method: str
    backward: dict[str, Any] | None = None
    mutated: list[int] = field(default_factory=list)
    warm_ms: float = 0.0
    peak: bool = False
    profile: bool = False  # trace the round (its calls checked, its times not a sample)

    def __post_init__(self) -> None:
        if self.method not in TIMING_METHODS:
            raise ValueError(f"timing method {self.method!r} is not one of {', '.join(TIMING_METHODS)}")
        if not self.slots:
            raise ValueError("a timing round needs at least one slot")


@dataclass(frozen=True)
class WarmRequest(ChildRequest):
    """Compile ahead: call the candidate once on each item's shapes, on inputs it draws itself."""

    op: ClassVar[str] = "warm"
    source: str
    where: str
    seed: int
    items: list[dict[str, Any]]


@dataclass(frozen=True)
class ReleaseRequest(ChildRequest):
    """Let go of what the judge handed over (before the judge builds the next config)."""

    op: ClassVar[str] = "release"


@dataclass(frozen=True)
class ExitRequest(ChildRequest):
    """End the child after it lets go of the judge's memory."""

    op: ClassVar[str] = "exit"


REQUESTS: dict[str, type[ChildRequest]] = {k.op: k for k in (ImportRequest, InstantiateRequest, RunRequest,
                                                             TimeRoundRequest, WarmRequest, ReleaseRequest,
                                                             ExitRequest)}
