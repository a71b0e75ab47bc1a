"""The scripted model server speaks the three wire formats, records requests, and injects failures.

These tests use only the standard library's HTTP client, so they run without the ``llm`` extra.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from model_server import RecordedRequest, ScriptedModelServer, ToolCall, Turn, has_tools


def post(server: ScriptedModelServer, path: str, body: dict[str, Any], headers: dict[str, str] | None = None,
         timeout: float = 10) -> tuple[int, dict[str, str], str]:
    request = urllib.request.Request(server.url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, {k.lower(): v for k, v in response.headers.items()}, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, {k.lower(): v for k, v in exc.headers.items()}, exc.read().decode()


def sse(text: str) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) of every event of a server-sent-events body."""
    events = []
    for frame in text.strip().split("\n\n"):
        name, data = None, []
        for line in frame.split("\n"):
            if line.startswith("event: "):
                name = line[len("event: "):]
            elif line.startswith("data: "):
                data.append(line[len("data: "):])
        payload = "\n".join(data)
        events.append((name, payload if payload == "[DONE]" else json.loads(payload)))
    return events


ANTHROPIC = {"model": "claude-test", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}
CHAT = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}
RESPONSES = {"model": "codex-test", "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}
CALL = ToolCall("read_file", {"path": "TASK.md", "note": "a fairly long argument to split into deltas"})


# -- Anthropic Messages ----------------------------------------------------------------------------------


def test_anthropic_message_json():
    with ScriptedModelServer([Turn.tools(CALL, text="Reading.", tokens_in=120, tokens_out=30)]) as server:
        status, headers, body = post(server, "/v1/messages", ANTHROPIC)
    message = json.loads(body)
    assert status == 200 and headers["content-type"] == "application/json"
    assert message["type"] == "message" and message["role"] == "assistant" and message["model"] == "claude-test"
    assert message["content"][0] == {"type": "text", "text": "Reading."}
    tool = message["content"][1]
    assert tool["type"] == "tool_use" and tool["id"].startswith("toolu_") and tool["name"] == "read_file"
    assert tool["input"] == CALL.arguments
    assert message["stop_reason"] == "tool_use"
    assert message["usage"]["input_tokens"] == 120 and message["usage"]["output_tokens"] == 30


def test_anthropic_stream_events():
    with ScriptedModelServer([Turn.tools(CALL, text="Reading the task file now.", tokens_in=7, tokens_out=9)],
                             chunk_size=8) as server:
        status, headers, body = post(server, "/v1/messages", dict(ANTHROPIC, stream=True))
    assert status == 200 and headers["content-type"].startswith("text/event-stream")
    events = sse(body)
    names = [name for name, _ in events]
    assert all(name == data["type"] for name, data in events)
    assert names[:2] == ["message_start", "ping"] and names[-2:] == ["message_delta", "message_stop"]
    start = events[0][1]["message"]
    assert start["content"] == [] and start["usage"]["input_tokens"] == 7
    blocks: dict[int, dict[str, Any]] = {}
    for name, data in events:
        if name == "content_block_start":
            blocks[data["index"]] = dict(data["content_block"], text="", json="")
        elif name == "content_block_delta":
            delta = data["delta"]
            if delta["type"] == "text_delta":
                blocks[data["index"]]["text"] += delta["text"]
            else:
                assert delta["type"] == "input_json_delta"
                blocks[data["index"]]["json"] += delta["partial_json"]
    assert blocks[0]["type"] == "text" and blocks[0]["text"] == "Reading the task file now."
    assert blocks[1]["type"] == "tool_use" and blocks[1]["name"] == "read_file" and blocks[1]["input"] == {}
    assert json.loads(blocks[1]["json"]) == CALL.arguments
    assert sum(name == "content_block_delta" for name in names) > 4  # really split into deltas
    assert names.count("content_block_start") == names.count("content_block_stop") == 2
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use" and delta["usage"]["output_tokens"] == 9


def test_count_tokens_models_and_other_paths_answer():
    with ScriptedModelServer([], model="m1") as server:
        status, _, body = post(server, "/v1/messages/count_tokens?beta=true", ANTHROPIC)
        assert status == 200 and json.loads(body)["input_tokens"] > 0
        with urllib.request.urlopen(server.url + "/v1/models", timeout=10) as response:
            models = json.loads(response.read())
        assert [m["id"] for m in models["data"]] == ["m1"]
        status, _, body = post(server, "/api/event_logging/batch", {"events": []})
        assert (status, json.loads(body)) == (200, {})
        head = urllib.request.Request(server.url + "/", method="HEAD")
        with urllib.request.urlopen(head, timeout=10) as response:
            assert response.status == 200
        assert server.served == 0 and server.model_requests == []
        recorded = server.requests[0]
        assert recorded.path == "/v1/messages/count_tokens" and recorded.query == {"beta": "true"}


# -- OpenAI Chat Completions ---------------------------------------------------------------------------------


def test_chat_completion_json():
    script = [Turn.tools(CALL, ToolCall("run_check", {"profile": True}, id="call_fixed"), tokens_in=50, tokens_out=5),
              "all done"]
    with ScriptedModelServer(script) as server:
        first = json.loads(post(server, "/v1/chat/completions", CHAT)[2])
        second = json.loads(post(server, "/v1/chat/completions", CHAT)[2])
    assert first["object"] == "chat.completion" and first["model"] == "gpt-test"
    choice = first["choices"][0]
    assert choice["finish_reason"] == "tool_calls" and choice["message"]["content"] is None
    calls = choice["message"]["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["read_file", "run_check"]
    assert json.loads(calls[0]["function"]["arguments"]) == CALL.arguments and calls[1]["id"] == "call_fixed"
    assert first["usage"] == {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
    assert second["choices"][0]["message"]["content"] == "all done"
    assert second["choices"][0]["finish_reason"] == "stop"


@pytest.mark.parametrize("include_usage", [True, False])
def test_chat_stream_tool_call_deltas(include_usage):
    body = dict(CHAT, stream=True, stream_options={"include_usage": include_usage})
    with ScriptedModelServer([Turn.tools(CALL, ToolCall("finish", {"summary": "ok"}), text="Let me look.",
                                         tokens_in=11, tokens_out=22)], chunk_size=10) as server:
        status, _, text = post(server, "/v1/chat/completions", body)
    events = sse(text)
    assert status == 200 and events[-1] == (None, "[DONE]")
    chunks = [data for _, data in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    content, calls, finish = "", {}, None
    for chunk in chunks:
        for choice in chunk["choices"]:
            delta = choice["delta"]
            content += delta.get("content") or ""
            for part in delta.get("tool_calls", []):
                slot = calls.setdefault(part["index"], {"id": None, "name": "", "args": ""})
                slot["id"] = part.get("id") or slot["id"]
                slot["name"] += part.get("function", {}).get("name", "")
                slot["args"] += part.get("function", {}).get("arguments", "")
            finish = choice["finish_reason"] or finish
    assert content == "Let me look." and finish == "tool_calls"
    assert [calls[i]["name"] for i in sorted(calls)] == ["read_file", "finish"]
    assert json.loads(calls[0]["args"]) == CALL.arguments and calls[1]["id"].startswith("call_")
    usage_chunks = [c for c in chunks if c.get("usage")]
    if include_usage:
        assert usage_chunks == [chunks[-1]] and chunks[-1]["choices"] == []
        assert chunks[-1]["usage"] == {"prompt_tokens": 11, "completion_tokens": 22, "total_tokens": 33}
    else:
        assert usage_chunks == [] and all("usage" not in c for c in chunks)


# -- OpenAI Responses (Codex) ----------------------------------------------------------------------------


def test_responses_stream_events():
    turn = Turn.tools(ToolCall("shell", {"command": ["bash", "-lc", "cat TASK.md"]}), text="Looking at the task.",
                      tokens_in=300, tokens_out=40)
    with ScriptedModelServer([turn], chunk_size=6) as server:
        status, _, text = post(server, "/v1/responses", dict(RESPONSES, stream=True, instructions="be brief"))
    events = sse(text)
    assert status == 200
    assert all(name == data["type"] for name, data in events)
    assert [data["sequence_number"] for _, data in events] == list(range(len(events)))
    names = [name for name, _ in events]
    assert names[:2] == ["response.created", "response.in_progress"] and names[-1] == "response.completed"
    assert events[0][1]["response"]["status"] == "in_progress"
    deltas = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    assert deltas == "Looking at the task."
    args = "".join(d["delta"] for n, d in events if n == "response.function_call_arguments.delta")
    assert json.loads(args) == {"command": ["bash", "-lc", "cat TASK.md"]}
    args_done = next(d for n, d in events if n == "response.function_call_arguments.done")
    assert args_done["arguments"] == args
    added = [d["item"] for n, d in events if n == "response.output_item.added"]
    done = [d["item"] for n, d in events if n == "response.output_item.done"]
    assert [i["type"] for i in added] == [i["type"] for i in done] == ["message", "function_call"]
    assert done[0]["content"][0] == {"type": "output_text", "text": "Looking at the task.", "annotations": [],
                                     "logprobs": []}
    call = done[1]
    assert call["name"] == "shell" and call["call_id"].startswith("call_") and call["status"] == "completed"
    final = events[-1][1]["response"]
    assert final["status"] == "completed" and final["id"] == events[0][1]["response"]["id"]
    assert final["output"] == done and final["instructions"] == "be brief"
    assert final["usage"] == {"input_tokens": 300, "input_tokens_details": {"cached_tokens": 0},
                              "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 0},
                              "total_tokens": 340}


def test_responses_json_and_custom_tools():
    body = dict(RESPONSES, tools=[{"type": "custom", "name": "apply_patch", "description": "patch files"},
                                  {"type": "function", "name": "shell", "parameters": {}}])
    patch = "*** Begin Patch\n*** End Patch\n"
    with ScriptedModelServer([Turn.tools(ToolCall("apply_patch", patch)), Turn.tools(ToolCall("apply_patch", patch))],
                             chunk_size=5) as server:
        response = json.loads(post(server, "/v1/responses", body)[2])
        events = sse(post(server, "/v1/responses", dict(body, stream=True))[2])
        assert server.model_requests[0].tool_names == ["apply_patch", "shell"]
    assert response["object"] == "response" and response["status"] == "completed"
    item = response["output"][0]
    assert item["type"] == "custom_tool_call" and item["input"] == patch and item["name"] == "apply_patch"
    streamed = "".join(d["delta"] for n, d in events if n == "response.custom_tool_call_input.delta")
    assert streamed == patch


# -- scripts, recording, failure injection ---------------------------------------------------------------------


def test_callable_steps_see_tool_results_of_every_protocol():
    seen: list[list[str]] = []

    def echo(request: RecordedRequest) -> Turn:
        seen.append(request.tool_results())
        return Turn.say(f"echo {request.protocol}: {request.tool_results()[-1]}")

    anthropic = dict(ANTHROPIC, messages=[
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                      "content": [{"type": "text", "text": "FILE-A"}]}]}])
    chat = dict(CHAT, messages=[{"role": "user", "content": "hi"},
                                {"role": "assistant", "content": None, "tool_calls": [
                                    {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}]},
                                {"role": "tool", "tool_call_id": "c1", "content": "FILE-B"}])
    responses = dict(RESPONSES, input=RESPONSES["input"] + [
        {"type": "function_call", "call_id": "c2", "name": "shell", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": "FILE-C"}])
    with ScriptedModelServer([echo, echo, echo]) as server:
        a = json.loads(post(server, "/v1/messages", anthropic)[2])
        b = json.loads(post(server, "/v1/chat/completions", chat)[2])
        c = json.loads(post(server, "/v1/responses", responses)[2])
        requests = server.model_requests
    assert seen == [["FILE-A"], ["FILE-B"], ["FILE-C"]]
    assert a["content"][0]["text"] == "echo anthropic: FILE-A"
    assert b["choices"][0]["message"]["content"] == "echo chat: FILE-B"
    assert c["output"][0]["content"][0]["text"] == "echo responses: FILE-C"
    assert [r.last_user_text() for r in requests] == ["hi", "hi", "hi"]


def test_requests_are_recorded_with_headers_and_body():
    with ScriptedModelServer(["one", "two"]) as server:
        post(server, "/v1/chat/completions", dict(CHAT, messages=[{"role": "system", "content": "SYS"}]),
             headers={"Authorization": "Bearer sk-test"})
        post(server, "/v1/messages?beta=true", dict(ANTHROPIC, system=[{"type": "text", "text": "SYS2"}]),
             headers={"x-api-key": "k", "anthropic-version": "2023-06-01"})
        first, second = server.model_requests
    assert (first.method, first.path, first.protocol, first.status) == ("POST", "/v1/chat/completions", "chat", 200)
    assert first.headers["authorization"] == "Bearer sk-test" and first.body["model"] == "gpt-test"
    assert first.system == "SYS" and not first.stream
    assert second.path == "/v1/messages" and second.query == {"beta": "true"} and second.protocol == "anthropic"
    assert second.headers["x-api-key"] == "k" and second.system == "SYS2"
    assert json.loads(second.raw) == second.body


def test_fail_next_answers_errors_with_retry_after_and_keeps_the_script():
    with ScriptedModelServer(["after the failures"]) as server:
        server.fail_next(1, status=429, retry_after=1.5)
        server.fail_next(1, status=529)
        status, headers, body = post(server, "/v1/messages", ANTHROPIC)
        assert status == 429 and headers["retry-after"] == "1.5" and headers["retry-after-ms"] == "1500"
        assert json.loads(body)["error"]["type"] == "rate_limit_error"
        status, headers, body = post(server, "/v1/messages", ANTHROPIC)
        assert status == 529 and "retry-after" not in headers
        assert json.loads(body) == {"type": "error", "error": {"type": "overloaded_error",
                                                                "message": "scripted failure: HTTP 529"}}
        server.fail_next(1, status=500, message="boom")
        status, _, body = post(server, "/v1/chat/completions", CHAT)
        assert status == 500 and json.loads(body)["error"]["message"] == "boom"
        status, _, body = post(server, "/v1/chat/completions", CHAT)
        assert status == 200 and json.loads(body)["choices"][0]["message"]["content"] == "after the failures"
        assert [r.status for r in server.model_requests] == [429, 529, 500, 200] and server.served == 1


def test_delay_holds_a_reply_and_close_does_not_wait_for_it():
    with ScriptedModelServer(["late", Turn.say("later", delay_s=0.3)]) as server:
        server.delay_next(0.3)
        started = time.monotonic()
        post(server, "/v1/chat/completions", CHAT)
        post(server, "/v1/chat/completions", CHAT)
        assert time.monotonic() - started >= 0.6
        server.delay_next(30)
        errors: list[BaseException] = []

        def held():
            try:
                post(server, "/v1/chat/completions", CHAT, timeout=20)
            except OSError as exc:  # the connection is closed when the server stops
                errors.append(exc)

        thread = threading.Thread(target=held)
        thread.start()
        server.wait_for_requests(3)
        closing = time.monotonic()
    thread.join(10)
    assert time.monotonic() - closing < 5 and not thread.is_alive() and errors


def test_disconnect_next_closes_without_answer():
    with ScriptedModelServer(["answered"]) as server:
        server.disconnect_next()
        with pytest.raises((urllib.error.URLError, ConnectionError, OSError)):
            post(server, "/v1/chat/completions", CHAT)
        assert json.loads(post(server, "/v1/chat/completions", CHAT)[2])["choices"][0]["message"]["content"] == "answered"
        assert [r.status for r in server.model_requests] == [None, 200]


def test_side_requests_and_an_exhausted_script():
    with ScriptedModelServer(["scripted"], scripted=has_tools, aside_text="a title") as server:
        side = json.loads(post(server, "/v1/messages", ANTHROPIC)[2])
        main = json.loads(post(server, "/v1/messages", dict(ANTHROPIC, tools=[{"name": "Bash", "input_schema": {}}]))[2])
        assert side["content"][0]["text"] == "a title" and main["content"][0]["text"] == "scripted"
        assert server.remaining == 0 and server.exhausted == 0
        extra = json.loads(post(server, "/v1/messages", dict(ANTHROPIC, tools=[{"name": "Bash"}]))[2])
        assert extra["content"][0]["text"] == ScriptedModelServer.EXHAUSTED_TEXT and server.exhausted == 1
        server.add("more")
        again = json.loads(post(server, "/v1/messages", dict(ANTHROPIC, tools=[{"name": "Bash"}]))[2])
        assert again["content"][0]["text"] == "more"


def test_a_step_that_raises_answers_500():
    def broken(request: RecordedRequest) -> Turn:
        raise KeyError("nothing")

    with ScriptedModelServer([broken]) as server:
        status, _, body = post(server, "/v1/chat/completions", CHAT)
    assert status == 500 and "KeyError" in json.loads(body)["error"]["message"]
