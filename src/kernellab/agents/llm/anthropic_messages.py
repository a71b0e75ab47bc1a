"""The Anthropic Messages API (``POST {base_url}/v1/messages``) through the ``anthropic`` SDK.

``base_url`` is the host without ``/v1``, as ``ANTHROPIC_BASE_URL`` is (a trailing ``/v1`` is
tolerated). Tool results go back as ``tool_result`` blocks of a user turn; empty text blocks,
which the API refuses, are never sent.
"""

from __future__ import annotations

import json
from typing import Any

from kernellab.agents.llm.conversation import Message, ModelReply, ToolCall, ToolSpec
from kernellab.agents.llm.transport import (
    ApiError,
    ModelTransport,
    check_deadline,
    error_message,
    import_sdk,
)

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
_RETRYABLE_STREAM_ERRORS = {"overloaded_error", "api_error", "rate_limit_error"}


class AnthropicMessagesClient:
    provider = "anthropic"

    def __init__(self, transport: ModelTransport, *, model: str, base_url: str | None, api_key: str | None,
                 max_tokens: int, temperature: float | None, stream: bool) -> None:
        anthropic = import_sdk("anthropic")
        self.transport = transport
        self.model = model
        base = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.base_url = base.removesuffix("/v1")
        self.url = self.base_url + "/v1/messages"
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.stream = stream
        # Retries are the transport's (max_retries=0 here). The key goes in ``x-api-key``, the header
        # the Messages API documents and every compatible server reads (this SDK would send it as a
        # bearer token); the SDK refuses to send without a credential, so a local server that needs
        # none (no key, a base_url given) gets a placeholder it ignores.
        key = api_key or "no-key"
        self._sdk = anthropic.Anthropic(api_key=key, base_url=self.base_url, max_retries=0,
                                        timeout=transport.timeout_s,
                                        default_headers={"x-api-key": key, "Authorization": anthropic.Omit(),
                                                         "anthropic-version": API_VERSION})

    def close(self) -> None:
        self._sdk.close()

    def request_body(self, system: str, messages: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "system": system,
                                "messages": [_wire(m) for m in messages]}
        if tools:
            body["tools"] = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
                             for t in tools]
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.stream:
            body["stream"] = True
        return body

    def complete(self, system: str, messages: list[Message], tools: list[ToolSpec],
                 deadline: float | None) -> ModelReply:
        body = self.request_body(system, messages, tools)

        def send(timeout: float) -> ModelReply:
            answer = self._sdk.messages.create(**body, timeout=timeout)
            if not self.stream:
                return _read_message(answer.model_dump())
            with answer:
                return _read_stream((event.model_dump() for event in answer), deadline)

        return self.transport.call(self.url, send, deadline)


def _wire(message: Message) -> dict[str, Any]:
    if message.role == "user":
        return {"role": "user", "content": message.text or "(empty)"}
    if message.role == "tool":
        return {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": r.call_id, "content": r.content or "(no output)",
             "is_error": r.is_error} for r in message.results]}
    content: list[dict[str, Any]] = []
    if message.text:
        content.append({"type": "text", "text": message.text})
    for c in message.tool_calls:
        content.append({"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments or {}})
    return {"role": "assistant", "content": content or [{"type": "text", "text": "(no reply)"}]}


def _tokens_in(usage: dict[str, Any]) -> int | None:
    parts = [usage.get(k) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")]
    known = [p for p in parts if isinstance(p, int)]
    return sum(known) if known else None


def _read_message(payload: dict[str, Any]) -> ModelReply:
    if not isinstance(payload, dict) or payload.get("type") == "error":
        raise ApiError(f"the server answered an error: {error_message(payload, str(payload))}", retryable=True)
    text: list[str] = []
    calls: list[ToolCall] = []
    for block in payload.get("content") or []:
        if block.get("type") == "text":
            text.append(block.get("text", ""))
        elif block.get("type") == "tool_use":
            calls.append(ToolCall.parse(block.get("id", ""), block.get("name", ""), block.get("input") or {}))
    usage = payload.get("usage") or {}
    return ModelReply("".join(text) if text else None, tuple(calls), _tokens_in(usage), usage.get("output_tokens"),
                      payload.get("stop_reason"))


def _read_stream(events: Any, deadline: float | None) -> ModelReply:
    """Events as dicts (the SDK parsed them; an ``error`` event raises there)."""
    blocks: dict[int, dict[str, Any]] = {}
    usage: dict[str, Any] = {}
    stop_reason: str | None = None
    stopped = False
    for event in events:
        check_deadline(deadline)
        kind = event.get("type")
        if kind == "message_start":
            usage.update((event.get("message") or {}).get("usage") or {})
        elif kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            block["partial_json"] = ""
            blocks[event.get("index", len(blocks))] = block
        elif kind == "content_block_delta":
            block = blocks.setdefault(event.get("index", 0), {"type": "text", "text": "", "partial_json": ""})
            delta = event.get("delta") or {}
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif delta.get("type") == "input_json_delta":
                block["partial_json"] += delta.get("partial_json", "")
        elif kind == "message_delta":
            stop_reason = (event.get("delta") or {}).get("stop_reason") or stop_reason
            for key, value in (event.get("usage") or {}).items():
                if value is not None:
                    usage[key] = value
        elif kind == "message_stop":
            stopped = True
            break
        elif kind == "error":
            error = event.get("error") or {}
            raise ApiError(f"the stream reported {error.get('type', 'an error')}: {error_message(event, str(event))}",
                           retryable=error.get("type") in _RETRYABLE_STREAM_ERRORS)
    if not stopped:
        raise ApiError("the stream ended before message_stop", retryable=True)
    text: list[str] = []
    calls: list[ToolCall] = []
    for _, block in sorted(blocks.items()):
        if block.get("type") == "text":
            text.append(block.get("text", ""))
        elif block.get("type") == "tool_use":
            raw = block["partial_json"] or json.dumps(block.get("input") or {})
            calls.append(ToolCall.parse(block.get("id", ""), block.get("name", ""), raw))
    return ModelReply("".join(text) if text else None, tuple(calls), _tokens_in(usage), usage.get("output_tokens"),
                      stop_reason)
