"""The OpenAI Chat Completions API (``POST {base_url}/chat/completions``) through the ``openai`` SDK.

OpenAI's own API and the OpenAI-compatible servers (vLLM, SGLang, Ollama, LM Studio, llama.cpp,
OpenRouter, Together, ...) speak it. ``base_url`` ends in ``/v1`` as ``OPENAI_BASE_URL`` does.
The reply length goes in ``max_completion_tokens`` on api.openai.com (its newer models refuse
``max_tokens``) and in ``max_tokens`` elsewhere (what every compatible server understands).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from kernellab.agents.llm.conversation import Message, ModelReply, ToolCall, ToolSpec
from kernellab.agents.llm.transport import (
    ApiError,
    ModelTransport,
    check_deadline,
    error_message,
    import_sdk,
)

DEFAULT_BASE_URL = "https://api.openai.com/v1"


class OpenAIChatClient:
    provider = "openai"

    def __init__(self, transport: ModelTransport, *, model: str, base_url: str | None, api_key: str | None,
                 max_tokens: int, temperature: float | None, stream: bool) -> None:
        openai = import_sdk("openai")
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
        # Retries are the transport's (max_retries=0 here). The SDK refuses to start without a key;
        # a server that needs none (no key, a base_url given) gets a placeholder and no header.
        self._sdk = openai.OpenAI(api_key=api_key or "no-key", base_url=self.base_url, max_retries=0,
                                  timeout=transport.timeout_s)
        self._headers = None if api_key else {"Authorization": openai.Omit()}

    def close(self) -> None:
        self._sdk.close()

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

    def complete(self, system: str, messages: list[Message], tools: list[ToolSpec],
                 deadline: float | None) -> ModelReply:
        body = self.request_body(system, messages, tools)

        def send(timeout: float) -> ModelReply:
            answer = self._sdk.chat.completions.create(**body, timeout=timeout, extra_headers=self._headers)
            if not self.stream:
                return _read_completion(answer.model_dump())
            with answer:
                return _read_stream((chunk.model_dump() for chunk in answer), deadline)

        return self.transport.call(self.url, send, deadline)


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


def _read_completion(payload: dict[str, Any]) -> ModelReply:
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


def _read_stream(chunks: Any, deadline: float | None) -> ModelReply:
    """Chunks as dicts (the SDK parsed the events and ends at ``[DONE]``; an error chunk raises)."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finish: str | None = None
    usage: dict[str, Any] = {}
    for chunk in chunks:
        check_deadline(deadline)
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(delta["content"])
            for part in delta.get("tool_calls") or []:
                index = part.get("index")
                slot = calls.setdefault(len(calls) if index is None else index, {"id": None, "name": "", "arguments": ""})
                slot["id"] = part.get("id") or slot["id"]
                function = part.get("function") or {}
                slot["name"] += function.get("name") or ""
                slot["arguments"] += function.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    if finish is None:
        raise ApiError("the stream ended before the reply was complete", retryable=True)
    tool_calls = tuple(ToolCall.parse(slot["id"] or f"call_{i}", slot["name"], slot["arguments"])
                       for i, slot in sorted(calls.items()))
    return ModelReply("".join(text) if text else None, tool_calls, usage.get("prompt_tokens"),
                      usage.get("completion_tokens"), finish)
