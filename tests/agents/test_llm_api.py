"""The ``api`` agent end to end over real HTTP against the scripted model server.

The workspace here is a temporary folder with TASK.md, reference.py, kernel.py and a stand-in
``check`` script that prints one fixed feedback line: these tests are about the agent's loop, its
wire formats, limits and retries. The real workspace and its ``check`` are tested with
``agents.workspace``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from model_server import RecordedRequest, ScriptedModelServer, ToolCall, Turn

pytest.importorskip("openai", reason="the api agent's tests need the llm extra (the openai SDK)")
pytest.importorskip("anthropic", reason="the api agent's tests need the llm extra (the anthropic SDK)")

from kernellab.agents.base import AgentError, ProposalRequest, create_agent
from kernellab.agents.llm.pricing import Price, known_price, resolve_price
from kernellab.agents.llm.retry import RetryPolicy, parse_retry_after

TASK = "# Task: vector add\nAdd two vectors. Seen configs: N=4096.\n"
PARENT = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, a, b):\n        return a + b\n"
NEW_KERNEL = "import triton\n\nclass ModelNew:  # the agent's kernel\n    pass\n"
FEEDBACK = "check: compiled; seen 3/3 correct; edge 2/2 correct; speedup 1.42x vs eager"
KEY_ENV = "KERNELLAB_TEST_API_KEY"
MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-haiku-4-5"}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "TASK.md").write_text(TASK)
    (ws / "reference.py").write_text("class Model: pass\n")
    (ws / "kernel.py").write_text(PARENT)
    check = ws / "check"
    check.write_text(f'#!/bin/sh\necho "{FEEDBACK}"\n'
                     f'[ "$1" = "--profile" ] && echo "profile: 1 kernel, 100% in add_kernel"\n'
                     f'echo "key in my environment: ${{{KEY_ENV}:-none}}" >&2\nexit 0\n')
    check.chmod(0o755)
    (tmp_path / "secret.txt").write_text("TOP-SECRET")
    return ws


@pytest.fixture(autouse=True)
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    for name in ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv(KEY_ENV, "sk-test-123")
    return "sk-test-123"


def make_agent(server: ScriptedModelServer, provider: str = "openai", **options):
    base_url = server.anthropic_base_url if provider == "anthropic" else server.openai_base_url
    settings = {"provider": provider, "model": MODELS[provider], "base_url": base_url, "api_key_env": KEY_ENV,
                "backoff_s": 0.01, "max_backoff_s": 1.0, "timeout_s": 10}
    settings.update(options)
    return create_agent("api", **settings)


def request_for(workspace: Path, **kw) -> ProposalRequest:
    return ProposalRequest(workspace=workspace, task_id="demo/vector_add", iteration=kw.pop("iteration", 1),
                           parent=PARENT, **kw)


def session() -> list[Turn]:
    """A model that reads the task, writes a kernel, checks it with a profile, and finishes."""
    return [Turn.tool("read_file", {"path": "TASK.md"}, tokens_in=100, tokens_out=10),
            Turn.tool("write_kernel", {"source": NEW_KERNEL}, tokens_in=200, tokens_out=50),
            Turn.tools(ToolCall("run_check", {"profile": True}), text="Checking it.", tokens_in=300, tokens_out=5),
            Turn.tool("finish", {"summary": "one fused Triton kernel"}, tokens_in=400, tokens_out=8)]


def transcript(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


# -- end to end ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_whole_session(workspace, provider, stream):
    with ScriptedModelServer(session(), chunk_size=7) as server:
        proposal = make_agent(server, provider, stream=stream).propose(
            request_for(workspace, feedback="last time: 2/3 correct", instructions="try vectorized loads"))
        requests = server.model_requests

    assert proposal.source == NEW_KERNEL == (workspace / "kernel.py").read_text()
    assert proposal.note == "one fused Triton kernel" and not proposal.timed_out
    usage = proposal.usage
    assert (usage.tokens_in, usage.tokens_out, usage.steps) == (1000, 73, 4) and usage.wall_s > 0
    price = known_price(MODELS[provider])
    assert usage.cost_usd == pytest.approx(price.cost(1000, 73))

    assert len(requests) == 4 and all(r.stream == stream for r in requests)
    first = requests[0]
    assert first.body["model"] == MODELS[provider]
    assert set(first.tool_names) == {"read_file", "write_kernel", "run_check", "finish"}
    assert "kernel.py" in first.system and "run_check" in first.system
    assert "last time: 2/3 correct" in first.last_user_text() and "try vectorized loads" in first.last_user_text()
    if provider == "anthropic":
        assert first.path == "/v1/messages" and first.headers["x-api-key"] == "sk-test-123"
        assert first.headers["anthropic-version"] == "2023-06-01" and first.body["max_tokens"] == 8192
    else:
        assert first.path == "/v1/chat/completions" and first.headers["authorization"] == "Bearer sk-test-123"
        assert first.body["max_tokens"] == 8192
        assert (first.body.get("stream_options") == {"include_usage": True}) == stream
    # each tool's result reached the model in the next request
    assert requests[1].tool_results() == [TASK]
    assert requests[2].tool_results()[-1].startswith("wrote kernel.py")
    check_output = requests[3].tool_results()[-1]
    assert check_output.startswith("exit status 0") and FEEDBACK in check_output and "profile: 1 kernel" in check_output
    assert "key in my environment: none" in check_output  # the API key is not passed to the check

    log = transcript(proposal.log_path)
    assert proposal.log_path.parent == workspace.parent and proposal.log_path.suffix == ".jsonl"
    assert [r["kind"] for r in log] == ["start", "user", "assistant", "tool", "assistant", "tool", "assistant",
                                        "tool", "assistant", "tool", "end"]
    assert log[-1]["reason"] == "finished" and log[-1]["usage"]["tokens_in"] == 1000
    assert "sk-test-123" not in proposal.log_path.read_text()


def test_a_step_can_answer_from_what_a_tool_returned(workspace):
    def rewrite(request: RecordedRequest) -> Turn:
        return Turn.tool("write_kernel", {"source": request.tool_results()[-1] + "# tuned\n"})

    script = [Turn.tool("read_file", {"path": "kernel.py"}), rewrite, Turn.tool("finish", {"summary": "s"})]
    with ScriptedModelServer(script) as server:
        proposal = make_agent(server, "anthropic", stream=True).propose(request_for(workspace))
    assert proposal.source == PARENT + "# tuned\n"


def test_others_are_shown_to_the_model(workspace):
    with ScriptedModelServer([Turn.tool("finish", {"summary": "s"})]) as server:
        proposal = make_agent(server).propose(request_for(workspace, others=("# OTHER KERNEL A",)))
        first = server.model_requests[0]
    assert "# OTHER KERNEL A" in first.last_user_text()
    assert proposal.source is None and "kernel.py was not written" in proposal.note


# -- retries and failures -----------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_rate_limits_are_retried_after_the_servers_wait(workspace, provider):
    with ScriptedModelServer(session()) as server:
        server.fail_next(2, status=429, retry_after=0.2)
        started = time.monotonic()
        proposal = make_agent(server, provider).propose(request_for(workspace))
        elapsed = time.monotonic() - started
        statuses = [r.status for r in server.model_requests]
    assert proposal.source == NEW_KERNEL and proposal.note == "one fused Triton kernel"
    assert statuses == [429, 429, 200, 200, 200, 200] and elapsed >= 0.4
    retries = [r for r in transcript(proposal.log_path) if r["kind"] == "retry"]
    assert [(r["attempt"], r["status"], r["wait_s"]) for r in retries] == [(1, 429, 0.2), (2, 429, 0.2)]


def test_server_errors_give_up_after_max_retries_with_a_clear_note(workspace):
    with ScriptedModelServer(session()) as server:
        server.fail_next(10, status=500, message="the backend fell over")
        proposal = make_agent(server, max_retries=2).propose(request_for(workspace))
        tries = len(server.model_requests)
    assert tries == 3 and proposal.source is None and proposal.usage.steps == 0
    assert "the model call failed" in proposal.note and "HTTP 500" in proposal.note
    assert "the backend fell over" in proposal.note and "gave up after 3 tries" in proposal.note
    assert transcript(proposal.log_path)[-1]["reason"] == "error"


def test_client_errors_are_not_retried(workspace):
    with ScriptedModelServer(session()) as server:
        server.fail_next(1, status=401, message="invalid x-api-key")
        proposal = make_agent(server, "anthropic").propose(request_for(workspace))
        tries = len(server.model_requests)
    assert tries == 1 and "HTTP 401" in proposal.note and "invalid x-api-key" in proposal.note


@pytest.mark.parametrize("stream", [False, True])
def test_dropped_connections_are_retried(workspace, stream):
    with ScriptedModelServer(session()) as server:
        server.disconnect_next(1)
        proposal = make_agent(server, stream=stream).propose(request_for(workspace))
    assert proposal.source == NEW_KERNEL
    assert [r["kind"] for r in transcript(proposal.log_path)].count("retry") == 1


# -- limits ---------------------------------------------------------------------------------------------


def test_max_steps_stops_the_loop(workspace):
    script = [Turn.tool("write_kernel", {"source": NEW_KERNEL})] + [Turn.tool("run_check", {})] * 10
    with ScriptedModelServer(script) as server:
        proposal = make_agent(server, max_steps=3).propose(request_for(workspace))
        tries = len(server.model_requests)
    assert tries == 3 and proposal.usage.steps == 3
    assert proposal.source == NEW_KERNEL and "max_steps=3" in proposal.note


def test_token_budget_stops_before_a_prompt_that_would_overspend(workspace):
    script = [Turn.tool("run_check", {}, tokens_in=1000, tokens_out=100)] * 10
    with ScriptedModelServer(script) as server:
        proposal = make_agent(server, token_budget=2500).propose(request_for(workspace))
        tries = len(server.model_requests)
    # after two turns 2200 tokens are spent, and the next prompt alone is at least 1000 more
    assert tries == 2 and proposal.usage.tokens_in + proposal.usage.tokens_out == 2200
    assert "token budget (2500)" in proposal.note


def test_dollar_budget_uses_the_given_prices(workspace):
    script = [Turn.tool("run_check", {}, tokens_in=100_000, tokens_out=10_000)] * 10
    with ScriptedModelServer(script) as server:
        proposal = make_agent(server, model="my-local-model", dollar_budget=1.0, price_in_per_mtok=3,
                              price_out_per_mtok=15).propose(request_for(workspace))
    # each turn costs 0.3 + 0.15 = $0.45: two turns, then the next prompt ($0.30) would pass $1
    assert proposal.usage.steps == 2 and proposal.usage.cost_usd == pytest.approx(0.90)
    assert "dollar budget ($1)" in proposal.note


def test_unknown_model_has_no_cost(workspace):
    with ScriptedModelServer([Turn.tool("finish", {"summary": "done"})]) as server:
        proposal = make_agent(server, model="qwen3-coder-local").propose(request_for(workspace))
    assert proposal.usage.cost_usd is None and proposal.usage.tokens_in is not None
    assert "cost unknown" in proposal.note and "price_in_per_mtok" in proposal.note


@pytest.mark.parametrize("stream", [False, True])
def test_the_deadline_cuts_a_slow_reply(workspace, stream):
    with ScriptedModelServer([Turn.tool("write_kernel", {"source": NEW_KERNEL}), "too late"]) as server:
        server.delay_next(0.0)
        server.delay_next(30.0)
        started = time.monotonic()
        proposal = make_agent(server, stream=stream).propose(request_for(workspace, deadline_s=1.0))
        elapsed = time.monotonic() - started
    assert proposal.timed_out and elapsed < 5
    assert proposal.source == NEW_KERNEL and "deadline" in proposal.note


# -- the tools ----------------------------------------------------------------------------------------------


def test_reads_outside_the_workspace_are_refused(workspace):
    (workspace / "link").symlink_to(workspace.parent / "secret.txt")
    script = [Turn.tools(ToolCall("read_file", {"path": "../secret.txt"}), ToolCall("read_file", {"path": "/etc/passwd"}),
                         ToolCall("read_file", {"path": "link"}), ToolCall("read_file", {"path": "sub/../TASK.md"}),
                         ToolCall("read_file", {"path": "."})),
              Turn.tool("finish", {"summary": "s"})]
    with ScriptedModelServer(script) as server:
        make_agent(server, "anthropic").propose(request_for(workspace))
        second = server.model_requests[1]
    escape, absolute, link, inside, listing = second.tool_results()
    assert "outside the workspace" in escape and "outside the workspace" in link
    assert "not an absolute one" in absolute
    assert inside == TASK and "TASK.md" in listing.split("\n") and "check" in listing.split("\n")
    blocks = second.body["messages"][-1]["content"]
    assert [b["is_error"] for b in blocks] == [True, True, True, False, False]
    assert "TOP-SECRET" not in json.dumps([r.body for r in server.requests])


def test_bad_tool_calls_are_answered_not_fatal(workspace):
    script = [Turn.tools(ToolCall("write_kernel", "{not json"), ToolCall("rm_rf", {}), ToolCall("write_kernel", {})),
              Turn.tool("finish", {"summary": "s"})]
    with ScriptedModelServer(script) as server:
        proposal = make_agent(server).propose(request_for(workspace))
        results = server.model_requests[1].tool_results()
    assert "not a JSON object" in results[0] and "no tool named 'rm_rf'" in results[1]
    assert "'source'" in results[2] and proposal.source is None and proposal.note == "s; kernel.py was not written"


def test_a_turn_without_tools_gets_one_reminder(workspace):
    script = ["I will now read the task.", Turn.tool("write_kernel", {"source": NEW_KERNEL}), "Done, I think.",
              "Really done."]
    with ScriptedModelServer(script) as server:
        proposal = make_agent(server).propose(request_for(workspace))
        requests = server.model_requests
    assert len(requests) == 4 and "Continue with the tools" in requests[1].last_user_text()
    assert proposal.source == NEW_KERNEL and "stopped calling tools" in proposal.note


def test_a_check_that_hangs_is_stopped(workspace):
    (workspace / "check").write_text("#!/bin/sh\necho started\nsleep 30\n")
    with ScriptedModelServer([Turn.tool("run_check", {}), Turn.tool("finish", {"summary": "s"})]) as server:
        started = time.monotonic()
        make_agent(server, check_timeout_s=1.0).propose(request_for(workspace))
        result = server.model_requests[1].tool_results()[0]
    assert time.monotonic() - started < 10
    assert result.startswith("timed out after 1s") and "started" in result


# -- options and availability -------------------------------------------------------------------------------


def test_options_are_checked_and_converted(monkeypatch):
    agent = create_agent("api", provider="anthropic", model="claude-sonnet-4-5", base_url="http://127.0.0.1:9",
                         max_steps="7", stream="true", temperature="0.2", token_budget="none")
    assert (agent.options.max_steps, agent.options.stream, agent.options.temperature) == (7, True, 0.2)
    assert agent.options.token_budget is None and agent.options.key_env == "ANTHROPIC_API_KEY"
    with pytest.raises(AgentError, match="no option 'max_step'"):
        create_agent("api", model="m", base_url="http://x", max_step=3)
    with pytest.raises(AgentError, match="provider must be one of"):
        create_agent("api", provider="gemini", model="m", base_url="http://x")
    with pytest.raises(AgentError, match="give a model"):
        create_agent("api", base_url="http://x")
    with pytest.raises(AgentError, match="whole number"):
        create_agent("api", model="m", base_url="http://x", max_steps="2.5")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(AgentError, match=r"\$OPENAI_API_KEY is not set"):
        create_agent("api", model="gpt-5")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert create_agent("api", model="gpt-5").options.resolved_base_url() == "http://127.0.0.1:9/v1"
    with pytest.raises(AgentError, match="dollar_budget needs a price"):
        create_agent("api", model="local-model", dollar_budget=1)


def test_availability(monkeypatch):
    from kernellab.agents.adapters.llm_api import ApiAgent

    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert not ApiAgent.availability().usable and "base_url" in ApiAgent.availability().why
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    available = ApiAgent.availability()
    assert available.usable and "ANTHROPIC_API_KEY" in available.why and "k" not in available.why.split()


def test_without_the_sdks_the_agent_names_the_extra():
    code = ("import sys; sys.modules['openai'] = None; sys.modules['anthropic'] = None\n"
            "from kernellab.agents.base import AgentError, create_agent, registered\n"
            "from kernellab.agents.adapters.llm_api import ApiAgent\n"
            "print(ApiAgent.availability().why)\n"
            "try:\n    create_agent('api', model='m', base_url='http://127.0.0.1:9')\n"
            "except AgentError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")})
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().split("\n")
    assert len(lines) == 2 and all("pip install 'kernellab[llm]'" in line for line in lines)


# -- small parts ----------------------------------------------------------------------------------------------


def test_prices_match_exact_names_only():
    assert known_price("claude-sonnet-4-5-20250929") == Price(3.0, 15.0)
    assert known_price("openai/gpt-4.1-mini-2025-04-14") == Price(0.4, 1.6)
    assert known_price("gpt-5.5") is None and known_price("claude-sonnet-4-5-fast") is None
    assert resolve_price("gpt-4o", 1.0, None) == Price(1.0, 10.0)
    assert resolve_price("mystery", 1.0, None) is None and resolve_price("mystery", 1, 2) == Price(1, 2)


def test_retry_waits():
    policy = RetryPolicy(max_retries=5, backoff_s=1.0, max_backoff_s=10.0)
    assert all(0.5 <= policy.wait_s(0) <= 1.0 for _ in range(50))
    assert all(5.0 <= policy.wait_s(6) <= 10.0 for _ in range(50))
    assert policy.wait_s(0, retry_after=3.0) == 3.0 and policy.wait_s(0, retry_after=99) == 10.0
    assert parse_retry_after({"Retry-After": "2"}) == 2.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0) == 10.0
    assert parse_retry_after({}) is None and parse_retry_after({"retry-after": "soon"}) is None
