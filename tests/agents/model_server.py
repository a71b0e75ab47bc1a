"""A scripted model server for tests: real HTTP on 127.0.0.1, replies taken from a script.

It speaks three wire formats, closely enough that real clients (the Anthropic and OpenAI SDKs, the
Claude Code and Codex CLIs, kernellab's own ``api`` agent) take it for the real thing:

- Anthropic Messages: ``POST /v1/messages`` (JSON, or ``"stream": true`` server-sent events:
  message_start, ping, content_block_start/delta/stop with text_delta and input_json_delta,
  message_delta with stop_reason and usage, message_stop), ``POST /v1/messages/count_tokens``;
- OpenAI Chat Completions: ``POST /v1/chat/completions`` (JSON, or streamed chunks with
  ``tool_calls`` deltas, a final usage chunk when ``stream_options.include_usage``, ``[DONE]``);
- OpenAI Responses (what the Codex CLI speaks): ``POST /v1/responses`` (streamed: response.created,
  response.in_progress, response.output_item.added, response.content_part.added,
  response.output_text.delta/done, response.function_call_arguments.delta/done,
  response.output_item.done, response.completed with usage; or one JSON response object);
- ``GET /v1/models`` (OpenAI, Anthropic and Codex shapes at once); any other request gets ``200 {}`` so start-up probes of a CLI pass.

Paths match on their ending, so a base URL with a prefix (``/openai/v1``) works as well.

Usage::

    import sys; sys.path.insert(0, str(Path(__file__).parent))   # tests/ has no __init__.py
    from model_server import ScriptedModelServer, ToolCall, Turn

    script = [
        Turn.tool("read_file", {"path": "TASK.md"}),               # one tool call
        Turn.tools(ToolCall("a", {}), ToolCall("b", {"x": 1})),    # several in one turn
        lambda request: f"the tool said {request.tool_results()[-1]!r}",   # computed from the request
        Turn.say("done", tokens_in=1200, tokens_out=40),           # text with usage
    ]
    with ScriptedModelServer(script) as server:
        client(base_url=server.openai_base_url)   # or server.anthropic_base_url
        assert server.model_requests[0].body["model"] == "my-model"
        assert server.model_requests[1].tool_results() == ["...contents of TASK.md..."]

Script steps are a :class:`Turn`, a ``str`` (a text turn), or a callable taking the
:class:`RecordedRequest` and returning either. Each *scripted* model request consumes one step, in
order, whatever its protocol; once the script is spent the server answers a text turn
(:attr:`ScriptedModelServer.EXHAUSTED_TEXT`) and counts it in :attr:`ScriptedModelServer.exhausted`.
CLIs also send side requests (titles, quota probes): pass ``scripted=has_tools`` so that only
requests offering tools consume steps, and the others get ``aside_text``.

Failure injection (applies to the next scripted model requests; they are recorded but consume no
step): :meth:`~ScriptedModelServer.fail_next` (an HTTP error in the protocol's error format, with
``retry-after``), :meth:`~ScriptedModelServer.delay_next` (hold the reply), and
:meth:`~ScriptedModelServer.disconnect_next` (close the connection without answering).
"""

from __future__ import annotations

import gzip
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self
from urllib.parse import parse_qsl, urlsplit

log = logging.getLogger("model_server")

__all__ = ["RecordedRequest", "ScriptedModelServer", "ToolCall", "Turn", "has_tools"]


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a scripted turn. ``arguments`` as a ``str`` is sent verbatim (so a test
    can send malformed JSON, or the free-form input of a Responses ``custom`` tool)."""

    name: str
    arguments: dict[str, Any] | str = field(default_factory=dict)
    id: str | None = None  # the call id; generated when None

    def arguments_json(self) -> str:
        return self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments)


@dataclass(frozen=True)
class Turn:
    """One assistant reply: text, tool calls, or both (text first).

    ``tokens_in`` / ``tokens_out`` are the usage reported (default: about 4 bytes a token of the
    request body and of the reply); ``delay_s`` holds the reply that long before answering;
    ``stop_reason`` overrides the protocol's own (e.g. ``"max_tokens"``).
    """

    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tokens_in: int | None = None
    tokens_out: int | None = None
    delay_s: float = 0.0
    stop_reason: str | None = None

    @classmethod
    def say(cls, text: str, **kw: Any) -> Turn:
        """A text turn (the same as ``Turn(text=...)``, or a plain ``str`` step)."""
        return cls(text=text, **kw)

    @classmethod
    def tool(cls, name: str, arguments: dict[str, Any] | str | None = None, **kw: Any) -> Turn:
        """A turn of one tool call."""
        return cls(tool_calls=(ToolCall(name, {} if arguments is None else arguments),), **kw)

    @classmethod
    def tools(cls, *calls: ToolCall, text: str | None = None, **kw: Any) -> Turn:
        """A turn of several tool calls, optionally after some text."""
        return cls(text=text, tool_calls=tuple(calls), **kw)


@dataclass
class RecordedRequest:
    """One request the server received. ``headers`` have lower-case names; ``body`` is the parsed
    JSON (``None`` when the body was empty or not JSON; ``raw`` keeps the bytes); ``protocol`` is
    ``"anthropic"``, ``"chat"`` or ``"responses"`` for a model call, else ``None``; ``status`` is what
    the server answered (``None`` until answered or when the connection was dropped)."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: Any
    raw: bytes
    protocol: str | None
    time: float
    status: int | None = None

    @property
    def stream(self) -> bool:
        return isinstance(self.body, dict) and bool(self.body.get("stream"))

    @property
    def messages(self) -> list[Any]:
        """The conversation as sent: ``messages`` (Anthropic, Chat) or ``input`` (Responses)."""
        if not isinstance(self.body, dict):
            return []
        items = self.body.get("input" if self.protocol == "responses" else "messages", [])
        if isinstance(items, str):
            return [{"role": "user", "content": items}]
        return list(items or [])

    @property
    def system(self) -> str | None:
        """The system prompt, whichever field carries it."""
        if not isinstance(self.body, dict):
            return None
        if self.protocol == "anthropic":
            return _text_of(self.body.get("system"))
        if self.protocol == "responses" and self.body.get("instructions"):
            return str(self.body["instructions"])
        for m in self.messages:
            if isinstance(m, dict) and m.get("role") in ("system", "developer"):
                return _text_of(m.get("content"))
        return None

    @property
    def tool_names(self) -> list[str]:
        tools = self.body.get("tools") if isinstance(self.body, dict) else None
        names = []
        for t in tools or []:
            if isinstance(t, dict):
                names.append(t.get("name") or (t.get("function") or {}).get("name") or t.get("type", ""))
        return names

    def tool_results(self) -> list[str]:
        """The text of every tool result in the conversation, oldest first, any protocol."""
        out: list[str] = []
        for m in self.messages:
            if not isinstance(m, dict):
                continue
            if self.protocol == "chat" and m.get("role") == "tool":
                out.append(_text_of(m.get("content")) or "")
            elif self.protocol == "responses" and m.get("type") in ("function_call_output",
                                                                     "custom_tool_call_output"):
                out.append(_text_of(m.get("output")) or "")
            elif self.protocol == "anthropic" and isinstance(m.get("content"), list):
                for block in m["content"]:
                    if isinstance(block, dict) and block.get("type") == "tool_result":
                        out.append(_text_of(block.get("content")) or "")
        return out

    def last_user_text(self) -> str | None:
        """The text of the last user message (tool results excluded)."""
        for m in reversed(self.messages):
            if isinstance(m, dict) and m.get("role") == "user":
                content = m.get("content")
                if isinstance(content, list):
                    content = [b for b in content if not (isinstance(b, dict) and b.get("type") == "tool_result")]
                    if not content:
                        continue
                return _text_of(content)
        return None


Step = Turn | str | Callable[[RecordedRequest], Turn | str]  # one entry of a script


def has_tools(request: RecordedRequest) -> bool:
    """A ``scripted`` predicate: only requests that offer the model tools consume script steps."""
    return bool(request.tool_names)


def _text_of(content: Any) -> str | None:
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(_text_of(part) or "" for part in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output"):
            if key in content:
                return _text_of(content[key])
    return str(content)


@dataclass
class _Failure:
    status: int
    retry_after: float | None
    message: str


_ANTHROPIC_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                          404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error",
                          500: "api_error", 529: "overloaded_error"}


class ScriptedModelServer:
    """A real HTTP server on 127.0.0.1 (random port, background thread) answering from a script.

    ``script``: steps (see the module docstring); more can be added with :meth:`add`.
    ``model``: the model id reported by ``/v1/models`` and in replies that name none.
    ``scripted``: which model requests consume a step (default: all); the others get ``aside_text``.
    ``chunk_size``: characters per streamed text or argument delta (several deltas per block).
    Use as a context manager, or call :meth:`start` and :meth:`close`.
    """

    EXHAUSTED_TEXT = "(the script has no more turns)"

    def __init__(self, script: Iterable[Step] = (), *, model: str = "scripted-model",
                 scripted: Callable[[RecordedRequest], bool] | None = None, aside_text: str = "OK",
                 chunk_size: int = 16) -> None:
        self.model = model
        self.scripted = scripted
        self.aside_text = aside_text
        self.chunk_size = max(1, chunk_size)
        self.exhausted = 0  # model requests answered after the script ran out
        self._script: list[Step] = list(script)
        self._served = 0
        self._requests: list[RecordedRequest] = []
        self._failures: list[_Failure] = []
        self._delays: list[float] = []
        self._disconnects = 0
        self._lock = threading.Condition()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> ScriptedModelServer:
        handler = type("Handler", (_Handler,), {"owner": self})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="scripted-model-server",
                                        kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving; replies being held by a delay are abandoned at once."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- addresses --------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not started")
        return self._httpd.server_address[1]

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT`` with no path."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def anthropic_base_url(self) -> str:
        """What ``ANTHROPIC_BASE_URL`` takes (the SDKs append ``/v1/messages``)."""
        return self.url

    @property
    def openai_base_url(self) -> str:
        """What ``OPENAI_BASE_URL`` / a Codex provider's ``base_url`` takes (``.../v1``)."""
        return self.url + "/v1"

    # -- the script -------------------------------------------------------------------------------

    def add(self, *steps: Step) -> None:
        """Append steps to the script."""
        with self._lock:
            self._script.extend(steps)

    @property
    def served(self) -> int:
        """Script steps consumed so far."""
        with self._lock:
            return self._served

    @property
    def remaining(self) -> int:
        """Script steps not yet consumed."""
        with self._lock:
            return len(self._script) - self._served

    # -- what was received ------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request received, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def model_requests(self) -> list[RecordedRequest]:
        """The model calls among :attr:`requests` (messages, chat completions, responses)."""
        return [r for r in self.requests if r.protocol is not None]

    def wait_for_requests(self, n: int, timeout: float = 10.0) -> list[RecordedRequest]:
        """Block until at least ``n`` model requests arrived (or ``timeout``); return them."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while sum(r.protocol is not None for r in self._requests) < n:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._lock.wait(left)
        return self.model_requests

    # -- failure injection ------------------------------------------------------------------------

    def fail_next(self, n: int = 1, status: int = 429, retry_after: float | None = None,
                  message: str | None = None) -> None:
        """Answer the next ``n`` scripted model requests with HTTP ``status`` (the protocol's error
        body; ``retry-after`` / ``retry-after-ms`` headers when ``retry_after`` is given)."""
        text = message or f"scripted failure: HTTP {status}"
        with self._lock:
            self._failures.extend(_Failure(status, retry_after, text) for _ in range(n))

    def delay_next(self, seconds: float, n: int = 1) -> None:
        """Hold the next ``n`` scripted model replies ``seconds`` before answering."""
        with self._lock:
            self._delays.extend([seconds] * n)

    def disconnect_next(self, n: int = 1) -> None:
        """Close the connection of the next ``n`` scripted model requests without an answer."""
        with self._lock:
            self._disconnects += n

    # -- internals used by the handler --------------------------------------------------------------

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)
            self._lock.notify_all()

    def _plan(self, request: RecordedRequest) -> tuple[str, Any, float]:
        """What to do with a model request: ("disconnect", None, 0), ("fail", _Failure, delay) or
        ("turn", Turn, delay)."""
        scripted = self.scripted is None or self.scripted(request)
        with self._lock:
            if not scripted:
                return "turn", Turn(text=self.aside_text), 0.0
            delay = self._delays.pop(0) if self._delays else 0.0
            if self._disconnects:
                self._disconnects -= 1
                return "disconnect", None, delay
            if self._failures:
                return "fail", self._failures.pop(0), delay
            if self._served < len(self._script):
                step = self._script[self._served]
                self._served += 1
            else:
                self.exhausted += 1
                step = Turn(text=self.EXHAUSTED_TEXT)
        if callable(step) and not isinstance(step, Turn):
            step = step(request)
        if isinstance(step, str):
            step = Turn(text=step)
        if not isinstance(step, Turn):
            raise TypeError(f"a script step gave {type(step).__name__}, not a Turn or str")
        return "turn", step, delay + step.delay_s

    def _hold(self, seconds: float) -> bool:
        """Wait ``seconds``; False when the server is closing meanwhile."""
        return seconds <= 0 or not self._stopping.wait(seconds)


# -- wire formats -------------------------------------------------------------------------------------


def _new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def _chunks(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _usage(turn: Turn, request: RecordedRequest) -> tuple[int, int]:
    tokens_in = turn.tokens_in if turn.tokens_in is not None else max(1, len(request.raw) // 4)
    produced = (turn.text or "") + "".join(c.name + c.arguments_json() for c in turn.tool_calls)
    tokens_out = turn.tokens_out if turn.tokens_out is not None else max(1, len(produced) // 4)
    return tokens_in, tokens_out


def _calls_with_ids(turn: Turn, prefix: str) -> list[tuple[str, ToolCall]]:
    return [(c.id or _new_id(prefix), c) for c in turn.tool_calls]


Event = tuple[str | None, dict[str, Any] | str]  # (SSE event name or None, data)


class _Anthropic:
    @staticmethod
    def message(turn: Turn, request: RecordedRequest, model: str) -> dict[str, Any]:
        tokens_in, tokens_out = _usage(turn, request)
        content: list[dict[str, Any]] = []
        if turn.text is not None:
            content.append({"type": "text", "text": turn.text})
        for call_id, call in _calls_with_ids(turn, "toolu_"):
            content.append({"type": "tool_use", "id": call_id, "name": call.name, "input": _json_or_raw(call)})
        return {"id": _new_id("msg_"), "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": _Anthropic.stop_reason(turn), "stop_sequence": None,
                "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out,
                          "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}

    @staticmethod
    def stop_reason(turn: Turn) -> str:
        return turn.stop_reason or ("tool_use" if turn.tool_calls else "end_turn")

    @staticmethod
    def events(turn: Turn, request: RecordedRequest, model: str, size: int) -> Iterator[Event]:
        tokens_in, tokens_out = _usage(turn, request)
        yield "message_start", {"type": "message_start", "message": {
            "id": _new_id("msg_"), "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": tokens_in, "output_tokens": 1, "cache_creation_input_tokens": 0,
                      "cache_read_input_tokens": 0}}}
        yield "ping", {"type": "ping"}
        index = 0
        if turn.text is not None:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            for piece in _chunks(turn.text, size):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": piece}}
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
            index += 1
        for call_id, call in _calls_with_ids(turn, "toolu_"):
            yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": {
                "type": "tool_use", "id": call_id, "name": call.name, "input": {}}}
            for piece in [""] + _chunks(call.arguments_json(), size):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "input_json_delta", "partial_json": piece}}
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
            index += 1
        yield "message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": _Anthropic.stop_reason(turn), "stop_sequence": None},
                                "usage": {"output_tokens": tokens_out}}
        yield "message_stop", {"type": "message_stop"}

    @staticmethod
    def error(failure: _Failure) -> dict[str, Any]:
        kind = _ANTHROPIC_ERROR_TYPES.get(failure.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": failure.message}}


class _Chat:
    @staticmethod
    def finish_reason(turn: Turn) -> str:
        return turn.stop_reason or ("tool_calls" if turn.tool_calls else "stop")

    @staticmethod
    def completion(turn: Turn, request: RecordedRequest, model: str) -> dict[str, Any]:
        tokens_in, tokens_out = _usage(turn, request)
        message: dict[str, Any] = {"role": "assistant", "content": turn.text, "refusal": None}
        if turn.tool_calls:
            message["tool_calls"] = [
                {"id": call_id, "type": "function", "function": {"name": c.name, "arguments": c.arguments_json()}}
                for call_id, c in _calls_with_ids(turn, "call_")]
        return {"id": _new_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "message": message, "logprobs": None,
                                             "finish_reason": _Chat.finish_reason(turn)}],
                "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                          "total_tokens": tokens_in + tokens_out}}

    @staticmethod
    def events(turn: Turn, request: RecordedRequest, model: str, size: int) -> Iterator[Event]:
        tokens_in, tokens_out = _usage(turn, request)
        include_usage = bool((request.body.get("stream_options") or {}).get("include_usage"))
        base = {"id": _new_id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model, "system_fingerprint": None}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
            data = dict(base, choices=[{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])
            if include_usage:
                data["usage"] = None
            return None, data

        yield chunk({"role": "assistant", "content": "", "refusal": None})
        if turn.text is not None:
            for piece in _chunks(turn.text, size):
                yield chunk({"content": piece})
        for i, (call_id, c) in enumerate(_calls_with_ids(turn, "call_")):
            yield chunk({"tool_calls": [{"index": i, "id": call_id, "type": "function",
                                         "function": {"name": c.name, "arguments": ""}}]})
            for piece in _chunks(c.arguments_json(), size):
                yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        yield chunk({}, _Chat.finish_reason(turn))
        if include_usage:
            yield None, dict(base, choices=[], usage={"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                                                      "total_tokens": tokens_in + tokens_out})
        yield None, "[DONE]"

    @staticmethod
    def error(failure: _Failure) -> dict[str, Any]:
        kind = {429: "rate_limit_exceeded", 401: "invalid_request_error", 400: "invalid_request_error"}
        return {"error": {"message": failure.message, "type": kind.get(failure.status, "server_error"),
                          "param": None, "code": kind.get(failure.status, "server_error")}}


class _Responses:
    @staticmethod
    def items(turn: Turn, request: RecordedRequest) -> list[dict[str, Any]]:
        """The finished output items of a turn."""
        custom = {t.get("name") for t in (request.body.get("tools") or [])
                  if isinstance(t, dict) and t.get("type") == "custom"}
        items: list[dict[str, Any]] = []
        if turn.text is not None:
            items.append({"id": _new_id("msg_"), "type": "message", "status": "completed", "role": "assistant",
                          "content": [{"type": "output_text", "text": turn.text, "annotations": [], "logprobs": []}]})
        for call_id, c in _calls_with_ids(turn, "call_"):
            if c.name in custom:
                items.append({"id": _new_id("ctc_"), "type": "custom_tool_call", "status": "completed",
                              "call_id": call_id, "name": c.name, "input": c.arguments_json()})
            else:
                items.append({"id": _new_id("fc_"), "type": "function_call", "status": "completed",
                              "call_id": call_id, "name": c.name, "arguments": c.arguments_json()})
        return items

    @staticmethod
    def response(turn: Turn, request: RecordedRequest, model: str, items: list[dict[str, Any]],
                 status: str = "completed", response_id: str | None = None) -> dict[str, Any]:
        tokens_in, tokens_out = _usage(turn, request)
        done = status == "completed"
        return {"id": response_id or _new_id("resp_"), "object": "response", "created_at": int(time.time()),
                "status": status, "error": None, "incomplete_details": None,
                "instructions": request.body.get("instructions"), "model": model,
                "output": items if done else [], "parallel_tool_calls": True, "tool_choice": "auto",
                "tools": [], "temperature": request.body.get("temperature"),
                "usage": {"input_tokens": tokens_in, "input_tokens_details": {"cached_tokens": 0},
                          "output_tokens": tokens_out, "output_tokens_details": {"reasoning_tokens": 0},
                          "total_tokens": tokens_in + tokens_out} if done else None}

    @staticmethod
    def events(turn: Turn, request: RecordedRequest, model: str, size: int) -> Iterator[Event]:
        items = _Responses.items(turn, request)
        response_id = _new_id("resp_")
        seq = iter(range(1_000_000))

        def event(kind: str, **data: Any) -> Event:
            return kind, {"type": kind, "sequence_number": next(seq), **data}

        started = _Responses.response(turn, request, model, [], "in_progress", response_id)
        yield event("response.created", response=started)
        yield event("response.in_progress", response=started)
        for out_index, item in enumerate(items):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                yield event("response.output_item.added", output_index=out_index,
                            item=dict(item, status="in_progress", content=[]))
                part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
                yield event("response.content_part.added", item_id=item["id"], output_index=out_index,
                            content_index=0, part=part)
                for piece in _chunks(text, size):
                    yield event("response.output_text.delta", item_id=item["id"], output_index=out_index,
                                content_index=0, delta=piece, logprobs=[])
                yield event("response.output_text.done", item_id=item["id"], output_index=out_index,
                            content_index=0, text=text, logprobs=[])
                yield event("response.content_part.done", item_id=item["id"], output_index=out_index,
                            content_index=0, part=item["content"][0])
            elif item["type"] == "function_call":
                yield event("response.output_item.added", output_index=out_index,
                            item=dict(item, status="in_progress", arguments=""))
                for piece in _chunks(item["arguments"], size):
                    yield event("response.function_call_arguments.delta", item_id=item["id"],
                                output_index=out_index, delta=piece)
                yield event("response.function_call_arguments.done", item_id=item["id"], output_index=out_index,
                            name=item["name"], arguments=item["arguments"])
            else:  # custom_tool_call
                yield event("response.output_item.added", output_index=out_index,
                            item=dict(item, status="in_progress", input=""))
                for piece in _chunks(item["input"], size):
                    yield event("response.custom_tool_call_input.delta", item_id=item["id"],
                                output_index=out_index, delta=piece)
                yield event("response.custom_tool_call_input.done", item_id=item["id"], output_index=out_index,
                            input=item["input"])
            yield event("response.output_item.done", output_index=out_index, item=item)
        yield event("response.completed",
                    response=_Responses.response(turn, request, model, items, "completed", response_id))

    error = _Chat.error


_PROTOCOLS = {"anthropic": _Anthropic, "chat": _Chat, "responses": _Responses}


def _json_or_raw(call: ToolCall) -> Any:
    if isinstance(call.arguments, dict):
        return call.arguments
    try:
        return json.loads(call.arguments)
    except ValueError:
        return call.arguments


def _protocol_of(method: str, path: str) -> str | None:
    if method != "POST":
        return None
    if path.endswith("/messages"):
        return "anthropic"
    if path.endswith("/chat/completions"):
        return "chat"
    if path.endswith("/responses"):
        return "responses"
    return None


class _Handler(BaseHTTPRequestHandler):
    owner: ScriptedModelServer
    protocol_version = "HTTP/1.1"
    server_version = "ScriptedModelServer/1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def do_HEAD(self) -> None:
        self._serve()

    def do_PUT(self) -> None:
        self._serve()

    def do_DELETE(self) -> None:
        self._serve()

    # -- reading ----------------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline()
        else:
            data = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.headers.get("content-encoding", "").lower() == "gzip":
            data = gzip.decompress(data)
        return data

    def _serve(self) -> None:
        owner = self.owner
        parts = urlsplit(self.path)
        path = parts.path.rstrip("/") or "/"
        raw = self._read_body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        request = RecordedRequest(method=self.command, path=path, query=dict(parse_qsl(parts.query)),
                                  headers={k.lower(): v for k, v in self.headers.items()}, body=body, raw=raw,
                                  protocol=_protocol_of(self.command, path) if isinstance(body, dict) else None,
                                  time=time.time())
        owner._record(request)
        try:
            if request.protocol is not None:
                self._answer_model_call(request)
            elif path.endswith("/messages/count_tokens"):
                self._send_json(request, 200, {"input_tokens": max(1, len(raw) // 4)})
            elif self.command == "GET" and "/models" in path:
                self._send_json(request, 200, self._models(path))
            else:
                self._send_json(request, 200, {})
        except (BrokenPipeError, ConnectionResetError):
            log.debug("the client went away from %s %s", self.command, path)
            self.close_connection = True

    def _models(self, path: str) -> dict[str, Any]:
        model = self.owner.model
        entry = {"id": model, "object": "model", "type": "model", "created": 0, "owned_by": "scripted",
                 "display_name": model, "created_at": "2025-01-01T00:00:00Z"}
        if not path.endswith("/models"):
            return entry
        # OpenAI's list and Anthropic's page in one; "models" is the Codex CLI's own listing (empty:
        # it keeps its built-in model presets)
        return {"object": "list", "data": [entry], "has_more": False, "first_id": model, "last_id": model,
                "models": []}

    # -- answering --------------------------------------------------------------------------------

    def _answer_model_call(self, request: RecordedRequest) -> None:
        owner = self.owner
        try:
            action, what, delay = owner._plan(request)
        except Exception as exc:  # a script step that raised: answer it, so the test sees why
            log.exception("script step failed")
            action, what, delay = "fail", _Failure(500, None, f"script step raised {exc!r}"), 0.0
        if not owner._hold(delay):
            self.close_connection = True
            return
        if action == "disconnect":
            self.close_connection = True
            return
        wire = _PROTOCOLS[request.protocol]
        if action == "fail":
            headers = {}
            if what.retry_after is not None:
                headers = {"retry-after": f"{what.retry_after:g}",
                           "retry-after-ms": str(int(what.retry_after * 1000))}
            self._send_json(request, what.status, wire.error(what), headers)
            return
        model = request.body.get("model") or owner.model
        if request.stream:
            self._send_events(request, wire.events(what, request, model, owner.chunk_size))
        elif request.protocol == "anthropic":
            self._send_json(request, 200, _Anthropic.message(what, request, model))
        elif request.protocol == "chat":
            self._send_json(request, 200, _Chat.completion(what, request, model))
        else:
            self._send_json(request, 200, _Responses.response(what, request, model, _Responses.items(what, request)))

    def _send_json(self, request: RecordedRequest, status: int, payload: Any,
                   headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        request.status = status
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", _new_id("req_"))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()

    def _send_events(self, request: RecordedRequest, events: Iterable[Event]) -> None:
        request.status = 200
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", _new_id("req_"))
        self.end_headers()
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            frame = (f"event: {name}\n" if name else "") + f"data: {text}\n\n"
            self._write_chunk(frame.encode())
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()
