"""Provider-neutral records of a tool-using conversation; the wire clients translate them."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: its name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model made. ``arguments`` is ``None`` when ``raw_arguments`` is not a JSON
    object; the loop then answers the call with an error instead of running it."""

    id: str
    name: str
    raw_arguments: str
    arguments: dict[str, Any] | None

    @classmethod
    def parse(cls, id: str, name: str, raw: Any) -> ToolCall:
        if isinstance(raw, dict):  # some servers send an object where the spec says a string
            return cls(id, name, json.dumps(raw), raw)
        text = raw if isinstance(raw, str) else ""
        try:
            value = json.loads(text) if text.strip() else {}
        except ValueError:
            value = None
        return cls(id, name, text, value if isinstance(value, dict) else None)


@dataclass(frozen=True)
class ToolResult:
    call_id: str
    name: str
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Message:
    """One entry of the conversation: a user text, an assistant turn (text and/or tool calls), or
    the results of the tool calls of the previous assistant turn."""

    role: Literal["user", "assistant", "tool"]
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    results: tuple[ToolResult, ...] = ()


@dataclass(frozen=True)
class ModelReply:
    """One assistant turn and its usage (``None``: the server did not report it)."""

    text: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    tokens_in: int | None = None
    tokens_out: int | None = None
    stop_reason: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class ModelClient(Protocol):
    """A chat endpoint: one call, one assistant turn. ``deadline`` is a ``time.monotonic()`` value."""

    provider: str
    model: str
    url: str

    def complete(self, system: str, messages: list[Message], tools: list[ToolSpec],
                 deadline: float | None) -> ModelReply: ...

    def close(self) -> None: ...
