"""The conversation of one proposal: ask the model, run the tools it calls, repeat, within limits.

It stops when the model calls ``finish``; when it ends a turn without a tool call twice in a row
(the first time it is reminded to use the tools); at ``max_steps`` model turns; when the token or
dollar budget is spent, or the next prompt alone would overspend it; at the deadline; or on a model
call that failed for good (after the transport's retries). Every step goes to a JSONL transcript.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self, TextIO

from kernellab.agents.base import Usage
from kernellab.agents.llm.conversation import Message, ModelClient, ModelReply, ToolSpec
from kernellab.agents.llm.pricing import Price
from kernellab.agents.llm.tools import WorkspaceTools
from kernellab.agents.llm.transport import ApiError, DeadlineReached

log = logging.getLogger(__name__)

NUDGE = "Continue with the tools: change kernel.py with write_kernel, test it with run_check, " \
        "and call finish with a summary when you are done."


@dataclass(frozen=True)
class LoopLimits:
    max_steps: int
    token_budget: int | None = None
    dollar_budget: float | None = None
    deadline: float | None = None  # a time.monotonic() value


@dataclass
class LoopOutcome:
    """Why the loop stopped (``finished``, ``no_tool_call``, ``max_steps``, ``token_budget``,
    ``dollar_budget``, ``deadline`` or ``error``), the model's summary, the error if any, and usage."""

    reason: str
    summary: str | None
    error: str | None
    usage: Usage


class Transcript:
    """One JSON object a line: ``{"t": seconds since start, "kind": ..., ...}``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._start = time.monotonic()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: TextIO = path.open("w", encoding="utf-8")

    def write(self, kind: str, **fields: Any) -> None:
        record = {"t": round(time.monotonic() - self._start, 3), "kind": kind, **fields}
        self._file.write(json.dumps(record, default=str) + "\n")
        self._file.flush()

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Meter:
    """Tokens and dollars spent so far, and whether the next call fits the budget."""

    def __init__(self, limits: LoopLimits, price: Price | None) -> None:
        self.limits = limits
        self.price = price
        self.tokens_in: int | None = None
        self.tokens_out: int | None = None
        self.last_prompt = 0

    def add(self, reply: ModelReply) -> None:
        if reply.tokens_in is not None:
            self.tokens_in = (self.tokens_in or 0) + reply.tokens_in
            self.last_prompt = reply.tokens_in
        if reply.tokens_out is not None:
            self.tokens_out = (self.tokens_out or 0) + reply.tokens_out

    @property
    def tokens(self) -> int:
        return (self.tokens_in or 0) + (self.tokens_out or 0)

    @property
    def cost(self) -> float | None:
        return None if self.price is None else self.price.cost(self.tokens_in, self.tokens_out)

    def over_budget(self) -> str | None:
        """The budget the next call would break (the prompt only grows, so the last prompt's size
        is a lower bound of the next one's), or None."""
        budget = self.limits.token_budget
        if budget is not None and self.tokens + self.last_prompt >= budget:
            return "token_budget"
        budget_usd = self.limits.dollar_budget
        if budget_usd is not None and self.price is not None and \
                (self.cost or 0.0) + self.price.cost(self.last_prompt, 0) >= budget_usd:
            return "dollar_budget"
        return None


def run_tool_loop(client: ModelClient, tools: WorkspaceTools, specs: list[ToolSpec], system: str, first: str,
                  limits: LoopLimits, price: Price | None, transcript: Transcript) -> LoopOutcome:
    started = time.monotonic()
    meter = _Meter(limits, price)
    messages: list[Message] = [Message("user", text=first)]
    transcript.write("user", text=first)
    steps = 0
    reason, error, summary = "max_steps", None, None
    nudged = False
    while True:
        if limits.deadline is not None and time.monotonic() >= limits.deadline:
            reason = "deadline"
            break
        if steps >= limits.max_steps:
            reason = "max_steps"
            break
        if (over := meter.over_budget()) is not None:
            reason = over
            break
        try:
            reply = client.complete(system, messages, specs, limits.deadline)
        except DeadlineReached as exc:
            reason, error = "deadline", str(exc)
            break
        except ApiError as exc:
            reason, error = "error", str(exc)
            break
        steps += 1
        meter.add(reply)
        transcript.write("assistant", step=steps, text=reply.text, stop_reason=reply.stop_reason,
                         tool_calls=[{"id": c.id, "name": c.name, "arguments": c.raw_arguments}
                                     for c in reply.tool_calls],
                         tokens_in=reply.tokens_in, tokens_out=reply.tokens_out, cost_usd=meter.cost)
        messages.append(Message("assistant", text=reply.text, tool_calls=reply.tool_calls))
        if reply.text:
            summary = reply.text
        if not reply.tool_calls:
            if nudged:
                reason = "no_tool_call"
                break
            nudged = True
            messages.append(Message("user", text=NUDGE))
            transcript.write("user", text=NUDGE)
            continue
        nudged = False
        results = []
        for call in reply.tool_calls:
            result = tools.run(call, limits.deadline)
            results.append(result)
            transcript.write("tool", step=steps, **asdict(result))
        messages.append(Message("tool", results=tuple(results)))
        if tools.finished:
            reason, summary = "finished", tools.summary
            break
    usage = Usage(meter.tokens_in, meter.tokens_out, meter.cost, steps, time.monotonic() - started)
    transcript.write("end", reason=reason, error=error, summary=summary, usage=asdict(usage),
                     kernel_writes=tools.kernel_writes, checks=tools.checks)
    log.info("api agent stopped: %s after %d model turns", reason, steps)
    return LoopOutcome(reason, summary, error, usage)
