"""What the agent CLIs' event streams (JSON lines) say about a run: tokens, cost, steps, last words.

Each reader takes the transcript's events and returns a ``StreamReport``; a field the CLI does not
report stays ``None``. Lines that are not JSON objects (warnings some CLIs print on stdout) are skipped.

- Claude Code (``--output-format stream-json``): the final ``result`` event carries ``usage``,
  ``total_cost_usd``, ``num_turns``, ``subtype`` (``success``, ``error_max_turns``,
  ``error_max_budget_usd``...) and ``result`` (the final text). A run killed before it has the
  ``assistant`` events' per-message usage, summed once per message id.
- Codex (``codex exec --json``): ``turn.completed`` carries ``usage`` (input tokens include the cached
  ones); items of type ``command_execution``, ``file_change``, ``mcp_tool_call``, ``web_search`` are
  the steps; the last ``agent_message`` is the final text; ``turn.failed`` / ``error`` end a run badly.
  No cost is reported.
- Cursor (``cursor-agent --output-format stream-json``): the final ``result`` event carries
  ``result``, ``is_error`` and, where reported, ``usage`` (``inputTokens``, ``outputTokens``);
  ``tool_call`` events with subtype ``completed`` are the steps. No cost is reported.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class StreamReport:
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    steps: int = 0
    final_text: str = ""
    error: str | None = None  # why the run ended badly, as the CLI says it
    stop: str | None = None  # a limit that stopped the run (max turns, budget), as the CLI names it


def read_events(path: Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSON-lines file, in order; other lines are skipped."""
    events = []
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return events
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _sum_or_none(values: Iterable[int | None]) -> int | None:
    seen = [v for v in values if v is not None]
    return sum(seen) if seen else None


def claude_report(events: list[dict[str, Any]]) -> StreamReport:
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    assistant = [e for e in events if e.get("type") == "assistant" and isinstance(e.get("message"), dict)]
    tool_uses = sum(1 for e in assistant for block in e["message"].get("content") or []
                    if isinstance(block, dict) and block.get("type") == "tool_use")
    if result is not None:
        usage = result.get("usage") or {}
        tokens_in = _int(usage.get("input_tokens")) + _int(usage.get("cache_creation_input_tokens")) \
            + _int(usage.get("cache_read_input_tokens"))
        cost = result.get("total_cost_usd")
        subtype = str(result.get("subtype") or "")
        errors = result.get("errors") or []
        error = None
        if result.get("is_error"):
            error = "; ".join(str(e) for e in errors) or str(result.get("result") or subtype or "error")
        return StreamReport(
            tokens_in=tokens_in if usage else None,
            tokens_out=_int(usage.get("output_tokens")) if usage else None,
            cost_usd=float(cost) if isinstance(cost, (int, float)) else None,
            steps=_int(result.get("num_turns")) or tool_uses,
            final_text=str(result.get("result") or ""),
            error=error,
            stop=subtype.removeprefix("error_") if subtype.startswith("error_max") else None,
        )
    # No result event (killed): per-message usage, once per message id.
    by_id: dict[str, dict[str, Any]] = {}
    for i, e in enumerate(assistant):
        by_id[str(e["message"].get("id") or i)] = e["message"].get("usage") or {}
    texts = [block.get("text", "") for e in assistant for block in e["message"].get("content") or []
             if isinstance(block, dict) and block.get("type") == "text"]
    return StreamReport(
        tokens_in=_sum_or_none(_int(u.get("input_tokens")) + _int(u.get("cache_creation_input_tokens"))
                               + _int(u.get("cache_read_input_tokens")) for u in by_id.values() if u),
        tokens_out=_sum_or_none(_int(u.get("output_tokens")) for u in by_id.values() if u),
        steps=tool_uses,
        final_text=texts[-1] if texts else "",
        error="no result event",
    )


CODEX_STEP_ITEMS = ("command_execution", "file_change", "mcp_tool_call", "web_search")


def codex_report(events: list[dict[str, Any]]) -> StreamReport:
    tokens_in = tokens_out = None
    steps = 0
    final_text = ""
    error = None
    for e in events:
        kind = e.get("type")
        if kind == "turn.completed":
            usage = e.get("usage") or {}
            tokens_in = (tokens_in or 0) + _int(usage.get("input_tokens"))
            tokens_out = (tokens_out or 0) + _int(usage.get("output_tokens"))
        elif kind == "item.completed":
            item = e.get("item") or {}
            if item.get("type") in CODEX_STEP_ITEMS:
                steps += 1
            elif item.get("type") == "agent_message":
                final_text = str(item.get("text") or "")
        elif kind == "turn.failed":
            error = str((e.get("error") or {}).get("message") or "turn failed")
        elif kind == "error":
            error = str(e.get("message") or "error")
    if error is None and not any(e.get("type") == "turn.completed" for e in events):
        error = "no turn.completed event"
    return StreamReport(tokens_in, tokens_out, None, steps, final_text, error)


def cursor_report(events: list[dict[str, Any]]) -> StreamReport:
    steps = sum(1 for e in events if e.get("type") == "tool_call" and e.get("subtype") == "completed")
    texts = [block.get("text", "") for e in events if e.get("type") == "assistant"
             for block in (e.get("message") or {}).get("content") or [] if isinstance(block, dict)]
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    if result is None:
        return StreamReport(steps=steps, final_text=texts[-1] if texts else "", error="no result event")
    usage = result.get("usage") or {}
    tokens_in = _int(usage.get("inputTokens")) + _int(usage.get("cacheReadTokens")) \
        + _int(usage.get("cacheWriteTokens"))
    error = str(result.get("result") or result.get("subtype") or "error") if result.get("is_error") else None
    return StreamReport(
        tokens_in=tokens_in if usage else None,
        tokens_out=_int(usage.get("outputTokens")) if usage else None,
        steps=steps,
        final_text=str(result.get("result") or (texts[-1] if texts else "")),
        error=error,
    )
