"""The OpenAI Chat Completions wire format (``POST {base_url}/chat/completions``).

OpenAI's own API and the OpenAI-compatible servers (vLLM, SGLang, Ollama, LM Studio, llama.cpp,
OpenRouter, Together, ...) speak it. ``base_url`` ends in ``/v1`` as ``OPENAI_BASE_URL`` does.
The reply length goes in ``max_completion_tokens`` on api.openai.com (its newer models refuse
``max_tokens``) and in ``max_tokens`` elsewhere (what every compatible server understands).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from kernellab.agents.llm.conversation import Message, ModelReply, ToolCall, ToolSpec
from kernellab.agents.llm.transport import (
    ApiError,
    HttpTransport,
    error_message,
    read_json,
    sse_events,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIChatClient:
    provider = "openai"

    def __init__(self, transport: HttpTransport, *, model: str, base_url: str | None, api_key: str | None,
                 max_tokens: int, temperature: float | None, stream: bool) -> None:
        self.transport = transport
        self.model = model
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.api_key = api_key
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.stream = stream
        official = urlsplit(self.base_url).hostname == "api.openai.com"
        self.max_tokens_field = "max_completion_tokens" if official else "max_tokens"

    def close(self) -> None:
        self.transport.close()

    # -- requests ---------------------------------------------------------------------------------

    def request_body(self, system: str, messages: list[Message], tools: list[ToolSpec]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [{"role": "system", "content": system}] + [m for msg in messages for m in _wire(msg)],
            self.max_tokens_field: self.max_tokens,
        }
        if tools:
            body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                               "parameters": t.parameters}} for t in tools]
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json"}
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        return headers

    def complete(self, system: str, messages: list[Message], tools: list[ToolSpec],
                 deadline: float | None) -> ModelReply:
        body = self.request_body(system, messages, tools)
        read = _read_stream if self.stream else _read_completion
        return self.transport.post(self.url, self.headers(), body, deadline, read)


def _wire(message: Message) -> list[dict[str, Any]]:
    if message.role == "user":
        return [{"role": "user", "content": message.text or ""}]
    if message.role == "tool":
        return [{"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in message.results]
    out: dict[str, Any] = {"role": "assistant", "content": message.text}
    if message.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.name, "arguments": c.raw_arguments}}
                             for c in message.tool_calls]
    elif out["content"] is None:
        out["content"] = ""
    return [out]


def _read_completion(response: Any, deadline: float | None) -> ModelReply:
    payload = read_json(response)
    choices = payload.get("choices") if isinstance(payload, dict) else None
    if not choices:
        raise ApiError(f"the reply has no choices: {error_message(payload, str(payload))}", retryable=True)
    choice = choices[0]
    message = choice.get("message") or {}
    calls = tuple(ToolCall.parse(c.get("id") or f"call_{i}", (c.get("function") or {}).get("name", ""),
                                 (c.get("function") or {}).get("arguments"))
                  for i, c in enumerate(message.get("tool_calls") or []))
    usage = payload.get("usage") or {}
    return ModelReply(message.get("content"), calls, usage.get("prompt_tokens"), usage.get("completion_tokens"),
                      choice.get("finish_reason"))


def _read_stream(response: Any, deadline: float | None) -> ModelReply:
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: dict[str, Any] = {}
    done = False
    for _, data in sse_events(response, deadline):
        if data.strip() == "[DONE]":
            done = True
            break
        try:
            chunk = json.loads(data)
        except ValueError:
            continue
        if chunk.get("error"):
            raise ApiError(f"the stream reported an error: {error_message(chunk, data)}", retryable=True)
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(delta["content"])
            for part in delta.get("tool_calls") or []:
                slot = calls.setdefault(part.get("index", len(calls)), {"id": None, "name": "", "arguments": ""})
                slot["id"] = part.get("id") or slot["id"]
                function = part.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    if not done and finish is None:
        raise ApiError("the stream ended before the reply was complete", retryable=True)
    tool_calls = tuple(ToolCall.parse(slot["id"] or f"call_{i}", slot["name"], slot["arguments"])
                       for i, slot in sorted(calls.items()))
    return ModelReply("".join(text) if text else None, tool_calls, usage.get("prompt_tokens"),
                      usage.get("completion_tokens"), finish)
