"""The whole-agent CLI adapters driven end to end: the real Claude Code and Codex CLIs (and a
stand-in speaking Cursor's format) against the scripted model server, in real workspaces.

The CLIs come from ``$KERNELLAB_AGENT_CLIS`` or PATH (``bash .ci/install_agent_clis.sh DIR`` installs
them and prints the folder); a test whose CLI is absent is skipped and says so. The scripted model
asks the CLI to write kernel.py with its own file tool, then to run ``./check`` with its shell tool,
then ends; the tests read what the server received (the check's output must come back as a tool
result) and what the adapter returned (source, tokens, cost, transcript).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from model_server import RecordedRequest, ScriptedModelServer, Turn, has_tools

from kernellab.agents.base import AgentError, ProposalRequest, create_agent, registered
from kernellab.agents.cli.claude_code import ClaudeCodeAgent
from kernellab.agents.cli.cli_agent import CLIS_DIR_ENV
from kernellab.agents.cli.codex import CodexAgent
from kernellab.agents.cli.process import group_alive, processes_with_marker
from kernellab.agents.cli.streams import (
    claude_report,
    codex_report,
    cursor_report,
    read_events,
)

STANDIN_BIN = Path(__file__).parent / "bin"
TASK_ID = "elementwise/relu"
PARENT = "import torch\n\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
FEEDBACK = "check: compiled; seen 3/3 correct; edge 3/3 correct; speedup 1.42x vs eager"
CLAUDE_MODEL = "claude-sonnet-4-5"  # a name Claude Code prices, so it reports a cost
CODEX_MODEL = "gpt-5-codex"

# The kernel the scripted model writes: a Triton ReLU.
NEW_KERNEL = '''\
import torch
import triton
import triton.language as tl


@triton.jit
def relu_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # reads n elements, writes n elements
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, tl.maximum(x, 0.0), mask=mask)


class ModelNew(torch.nn.Module):
    def forward(self, x):
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_kernel[(triton.cdiv(n, 1024),)](x, out, n, BLOCK=1024)
        return out
'''


# --- finding the CLIs -------------------------------------------------------------------------------

def require_cli(agent_cls) -> Path:
    path = agent_cls.find_executable()
    if path is None:
        pytest.skip(f"{agent_cls.executable_name} not found on ${CLIS_DIR_ENV} or PATH: run "
                    f"`bash .ci/install_agent_clis.sh DIR` and set {CLIS_DIR_ENV} to the folder it prints")
    return path


@pytest.fixture
def claude() -> Path:
    return require_cli(ClaudeCodeAgent)


@pytest.fixture
def codex() -> Path:
    return require_cli(CodexAgent)


@pytest.fixture
def cursor_standin() -> Path:
    path = STANDIN_BIN / "cursor-agent"
    assert os.access(path, os.X_OK), "tests/agents/bin/cursor-agent must be executable"
    return path


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No endpoint or key of the person running the tests reaches a CLI."""
    for name in ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_BASE_URL",
                 "OPENAI_API_KEY", "CURSOR_API_KEY"):
        monkeypatch.delenv(name, raising=False)


# --- workspaces ---------------------------------------------------------------------------------------

@pytest.fixture
def task_workspace(tmp_path: Path) -> Path:
    """A real workspace of the built-in ReLU task (TASK.md, reference.py, kernel.py, ./check)."""
    from kernellab.agents.workspace import build_workspace
    from kernellab.tasks.load import load_task

    try:
        return build_workspace(load_task(TASK_ID), tmp_path / "ws", PARENT).path
    except ImportError as e:  # its check service is another module
        pytest.skip(f"agents.workspace cannot build a workspace here: {e}")


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A small workspace whose ``check`` prints one fixed line (for limits and process tests)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "TASK.md").write_text("# Task: ReLU\n")
    (ws / "reference.py").write_text("class Model: pass\n")
    (ws / "kernel.py").write_text(PARENT)
    executable(ws / "check", f'#!/bin/sh\necho "{FEEDBACK}"\n')
    # A command that leaves children behind, one of them in a session of its own.
    executable(ws / "slow", "#!/bin/sh\nsleep 600 &\nsetsid sleep 601 &\nsleep 602\n")
    return ws


def executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def request(ws: Path, **kw) -> ProposalRequest:
    return ProposalRequest(workspace=ws, task_id=TASK_ID, iteration=kw.pop("iteration", 1), parent=PARENT, **kw)


def assert_nothing_left(agent) -> None:
    run = agent.last_run.result
    assert not group_alive(run.pid), "the CLI's process group is still alive"
    assert processes_with_marker(run.marker) == [], "processes of the run are still alive"


def check_output_came_back(server: ScriptedModelServer, marker: str) -> None:
    """The check's output reached the model as a tool result of a later request."""
    results = [text for r in server.model_requests for text in r.tool_results()]
    assert any(marker in text for text in results), f"no tool result holds {marker!r}: {results}"


def real_check_output(ws: Path) -> str:
    """The stable head of what ./check of a real workspace prints for the kernel in it (the verdict
    line without its timings), run as the agents run it: with this Python's folder first on PATH."""
    env = dict(os.environ, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    done = subprocess.run(["./check"], cwd=ws, capture_output=True, text=True, timeout=600, check=False, env=env)
    lines = (done.stdout or done.stderr).strip().splitlines()
    assert lines and lines[0].startswith(f"check {TASK_ID}:"), f"./check did not judge the kernel: {done}"
    return lines[0].split(" (")[0]


# --- Claude Code ----------------------------------------------------------------------------------

def claude_script(ws: Path) -> list:
    kernel = str(ws / "kernel.py")
    return [
        Turn.tool("Read", {"file_path": kernel}, tokens_in=1000, tokens_out=10),  # Write needs a Read first
        Turn.tool("Write", {"file_path": kernel, "content": NEW_KERNEL}, tokens_in=1100, tokens_out=200),
        Turn.tool("Bash", {"command": "./check", "description": "Check the kernel"}, tokens_in=1200,
                  tokens_out=20),
        Turn.say("kernel.py holds a Triton ReLU and ./check has run.", tokens_in=1300, tokens_out=30),
    ]


def test_claude_code_writes_the_kernel_and_runs_check(claude: Path, task_workspace: Path) -> None:
    ws = task_workspace
    with ScriptedModelServer(claude_script(ws), scripted=has_tools, model=CLAUDE_MODEL) as server:
        agent = create_agent("claude-code", base_url=server.anthropic_base_url, model=CLAUDE_MODEL,
                             env={"ANTHROPIC_API_KEY": "sk-test"}, max_turns=10, timeout_s=600)
        proposal = agent.propose(request(ws, feedback="seen 0/3 correct: returns x unchanged"))
        requests = server.model_requests

    assert (ws / "kernel.py").read_text() == NEW_KERNEL
    assert proposal.source == NEW_KERNEL
    assert not proposal.timed_out
    assert proposal.note == "kernel.py holds a Triton ReLU and ./check has run."
    # The check ran in the workspace and its output went back to the model.
    check_output_came_back(server, real_check_output(ws))
    # The model got the prompt (with the feedback) and the pre-approved tools; the key went as x-api-key.
    first = requests[0]
    assert "TASK.md" in first.last_user_text() and "seen 0/3 correct" in first.last_user_text()
    assert {"Bash", "Read", "Write", "Edit"} <= set(first.tool_names)
    assert first.headers.get("x-api-key") == "sk-test"
    assert first.body["model"] == CLAUDE_MODEL
    # Tokens and cost as the result event reports them: the scripted usage of the four turns.
    assert proposal.usage.tokens_in == 1000 + 1100 + 1200 + 1300
    assert proposal.usage.tokens_out == 10 + 200 + 20 + 30
    assert proposal.usage.cost_usd is not None and proposal.usage.cost_usd > 0
    assert proposal.usage.steps == 4
    # The raw stream is the transcript; the prompt and stderr are kept beside it, outside the workspace.
    events = read_events(proposal.log_path)
    assert events[0]["type"] == "system" and events[-1]["type"] == "result"
    assert not proposal.log_path.is_relative_to(ws)
    assert proposal.log_path.with_suffix("").with_suffix(".prompt.md").read_text().startswith("Write a fast")
    assert_nothing_left(agent)


def test_claude_code_stops_at_max_turns(claude: Path, workspace: Path) -> None:
    script = [Turn.tool("Bash", {"command": f"echo turn {i}", "description": "echo"}) for i in range(6)]
    with ScriptedModelServer(script, scripted=has_tools, model=CLAUDE_MODEL) as server:
        agent = create_agent("claude-code", base_url=server.anthropic_base_url, model=CLAUDE_MODEL,
                             env={"ANTHROPIC_API_KEY": "sk-test"}, max_turns=2, timeout_s=300)
        proposal = agent.propose(request(workspace))
        served = server.served
    assert served == 2
    assert proposal.note == "stopped by max_turns"
    assert proposal.source == PARENT and not proposal.timed_out
    assert proposal.usage.tokens_in and proposal.usage.cost_usd
    assert_nothing_left(agent)


def test_claude_code_stops_at_its_dollar_budget(claude: Path, workspace: Path) -> None:
    # A million input tokens a turn at Sonnet's list price is a few dollars: a $1 budget ends it after one.
    script = [Turn.tool("Bash", {"command": f"echo turn {i}", "description": "echo"}, tokens_in=1_000_000)
              for i in range(6)]
    with ScriptedModelServer(script, scripted=has_tools, model=CLAUDE_MODEL) as server:
        agent = create_agent("claude-code", base_url=server.anthropic_base_url, model=CLAUDE_MODEL,
                             env={"ANTHROPIC_API_KEY": "sk-test"}, max_budget_usd=1.0, timeout_s=300)
        proposal = agent.propose(request(workspace))
        served = server.served
    assert served == 1
    assert proposal.note == "stopped by max_budget_usd"
    assert proposal.usage.cost_usd is not None and proposal.usage.cost_usd > 1.0
    assert_nothing_left(agent)


def test_claude_code_timeout_kills_the_cli_and_what_it_started(claude: Path, workspace: Path) -> None:
    # The model runs ./slow, which leaves sleeps behind (one in its own session); the time limit hits.
    script = [Turn.tool("Bash", {"command": "./slow", "description": "Run the slow command"})]
    with ScriptedModelServer(script, scripted=has_tools, model=CLAUDE_MODEL) as server:
        agent = create_agent("claude-code", base_url=server.anthropic_base_url, model=CLAUDE_MODEL,
                             env={"ANTHROPIC_API_KEY": "sk-test"}, timeout_s=300)
        start = time.monotonic()
        proposal = agent.propose(request(workspace, deadline_s=8))  # the request's deadline is the shorter
        elapsed = time.monotonic() - start
        assert server.served == 1
    assert proposal.timed_out
    assert elapsed < 8 + 10
    assert proposal.note.startswith("stopped at the time limit")
    assert proposal.source == PARENT
    assert proposal.usage.tokens_in  # read from the assistant events, there being no result event
    assert_nothing_left(agent)


def test_claude_code_confined_by_kernellab(claude: Path, workspace: Path) -> None:
    from kernellab.agents.confine import confine, probe_confinement

    if not probe_confinement().available:
        pytest.skip(f"no confinement here: {probe_confinement().detail}")
    kernel = str(workspace / "kernel.py")
    script = [Turn.tool("Read", {"file_path": kernel}),
              Turn.tool("Write", {"file_path": kernel, "content": NEW_KERNEL}),
              Turn.tool("Bash", {"command": "./check; ls /work /root 2>&1 | head -3", "description": "Check"}),
              Turn.say("Done.")]
    with ScriptedModelServer(script, scripted=has_tools, model=CLAUDE_MODEL) as server:
        agent = create_agent("claude-code", base_url=server.anthropic_base_url, model=CLAUDE_MODEL,
                             env={"ANTHROPIC_API_KEY": "sk-test"}, timeout_s=300,
                             wrap=lambda argv, ws, env: confine(argv, ws, network=True, env=env))
        proposal = agent.propose(request(workspace))
        results = [text for r in server.model_requests for text in r.tool_results()]
    assert agent.last_run.confined and Path(agent.last_run.argv[0]).name == "bwrap"
    assert proposal.source == NEW_KERNEL and proposal.note == "Done."
    assert FEEDBACK in results[-1] and "No such file or directory" in results[-1]  # nothing but the workspace
    assert_nothing_left(agent)


# --- Codex --------------------------------------------------------------------------------------------

def codex_shell(command: str, **kw):
    """A script step running ``command`` with whichever shell tool this Codex offers."""
    def step(req: RecordedRequest) -> Turn:
        if "exec_command" in req.tool_names:  # answers after at most 30 s, the command still running
            return Turn.tool("exec_command", {"cmd": command, "yield_time_ms": 30_000}, **kw)
        return Turn.tool("shell", {"command": ["bash", "-c", command], "timeout_ms": 600_000}, **kw)
    return step


def codex_wait_or(final: Turn):
    """A script step that waits for a command still running (exec_command's session), else ``final``."""
    def step(req: RecordedRequest) -> Turn:
        running = re.search(r"Process running with session ID (\d+)", (req.tool_results() or [""])[-1])
        if running:
            return Turn.tool("write_stdin", {"session_id": int(running.group(1)), "chars": "",
                                             "yield_time_ms": 300_000}, tokens_in=0, tokens_out=0)
        return final
    return step


def replace_patch(old: str, new: str) -> str:
    """An apply_patch patch turning kernel.py from ``old`` into ``new``."""
    lines = ["*** Begin Patch", "*** Update File: kernel.py", "@@"]
    lines += ["-" + line for line in old.splitlines()] + ["+" + line for line in new.splitlines()]
    return "\n".join(lines + ["*** End Patch"]) + "\n"


def test_codex_writes_the_kernel_and_runs_check(codex: Path, task_workspace: Path) -> None:
    ws = task_workspace
    final = Turn.say("kernel.py holds a Triton ReLU and ./check has run.", tokens_in=1200, tokens_out=30)
    script = [
        codex_shell(f"apply_patch <<'PATCH'\n{replace_patch(PARENT, NEW_KERNEL)}PATCH\n", tokens_in=1000,
                    tokens_out=200),
        codex_shell("./check", tokens_in=1100, tokens_out=20),
        codex_wait_or(final), codex_wait_or(final), final,  # one final answer, after the check is done
    ]
    with ScriptedModelServer(script, scripted=has_tools, model=CODEX_MODEL) as server:
        agent = create_agent("codex", base_url=server.openai_base_url, model=CODEX_MODEL,
                             env={"OPENAI_API_KEY": "sk-test"}, timeout_s=600)
        proposal = agent.propose(request(ws, instructions="Write the kernel in Triton."))
        requests = server.model_requests

    assert (ws / "kernel.py").read_text() == NEW_KERNEL
    assert proposal.source == NEW_KERNEL
    assert not proposal.timed_out
    assert proposal.note == "kernel.py holds a Triton ReLU and ./check has run."
    check_output_came_back(server, real_check_output(ws))
    first = requests[0]
    assert first.protocol == "responses" and first.path == "/v1/responses"
    assert first.headers.get("authorization") == "Bearer sk-test"
    assert first.body["model"] == CODEX_MODEL
    assert "Write the kernel in Triton." in first.last_user_text()
    assert proposal.usage.tokens_in == 1000 + 1100 + 1200
    assert proposal.usage.tokens_out == 200 + 20 + 30
    assert proposal.usage.cost_usd is None  # Codex reports none
    assert proposal.usage.steps >= 2  # the patch and the check
    kinds = [e.get("item", {}).get("type") for e in read_events(proposal.log_path) if e["type"] == "item.completed"]
    assert "file_change" in kinds and "command_execution" in kinds
    assert_nothing_left(agent)


def test_codex_prices_tokens_when_given_prices(codex: Path, workspace: Path) -> None:
    with ScriptedModelServer([Turn.say("nothing to do", tokens_in=2_000_000, tokens_out=1_000_000)],
                             scripted=has_tools, model=CODEX_MODEL) as server:
        agent = create_agent("codex", base_url=server.openai_base_url, model=CODEX_MODEL,
                             env={"OPENAI_API_KEY": "sk-test"}, usd_per_mtok=(1.25, 10.0), timeout_s=300)
        proposal = agent.propose(request(workspace))
    assert proposal.usage.cost_usd == pytest.approx(2 * 1.25 + 1 * 10.0)
    assert proposal.note == "nothing to do"


def test_codex_timeout_while_the_model_is_silent(codex: Path, workspace: Path) -> None:
    with ScriptedModelServer([Turn.say("too late")], scripted=has_tools, model=CODEX_MODEL) as server:
        server.delay_next(120)
        agent = create_agent("codex", base_url=server.openai_base_url, model=CODEX_MODEL,
                             env={"OPENAI_API_KEY": "sk-test"}, timeout_s=6)
        start = time.monotonic()
        proposal = agent.propose(request(workspace))
        elapsed = time.monotonic() - start
        assert len(server.model_requests) >= 1
    assert proposal.timed_out
    assert 6 <= elapsed < 6 + 10
    assert proposal.source == PARENT
    assert_nothing_left(agent)


def test_codex_config_points_at_the_endpoint(codex: Path) -> None:
    agent = create_agent("codex", base_url="http://127.0.0.1:9/v1/", model="m",
                         env={"OPENAI_API_KEY": "k"}, reasoning_effort="low")
    config = agent.config_toml()
    assert 'base_url = "http://127.0.0.1:9/v1"' in config
    assert 'wire_api = "responses"' in config and 'env_key = "OPENAI_API_KEY"' in config
    assert 'approval_policy = "never"' in config and 'model_reasoning_effort = "low"' in config


# --- Cursor (the stand-in) --------------------------------------------------------------------------

def cursor_script(ws: Path) -> list:
    return [
        Turn.tool("write", {"path": "kernel.py", "contents": NEW_KERNEL}, tokens_in=500, tokens_out=200),
        Turn.tool("shell", {"command": "./check"}, tokens_in=600, tokens_out=10),
        Turn.say("Done: a Triton ReLU.", tokens_in=700, tokens_out=20),
    ]


def test_cursor_writes_the_kernel_and_runs_check(cursor_standin: Path, task_workspace: Path) -> None:
    ws = task_workspace
    with ScriptedModelServer(cursor_script(ws)) as server:
        agent = create_agent("cursor", executable=str(cursor_standin), model="auto", timeout_s=600,
                             env={"CURSOR_API_KEY": "key-test", "CURSOR_STANDIN_BASE_URL": server.openai_base_url})
        proposal = agent.propose(request(ws))
        first = server.model_requests[0]
    assert proposal.source == NEW_KERNEL == (ws / "kernel.py").read_text()
    assert proposal.note == "Done: a Triton ReLU."
    check_output_came_back(server, real_check_output(ws))
    assert "TASK.md" in first.last_user_text()
    assert proposal.usage.tokens_in == 500 + 600 + 700 and proposal.usage.tokens_out == 230
    assert proposal.usage.steps == 2 and proposal.usage.cost_usd is None
    events = read_events(proposal.log_path)
    assert [e["type"] for e in events][:2] == ["system", "user"] and events[-1]["type"] == "result"
    argv = agent.last_run.argv
    assert {"--print", "--trust", "--force"} <= set(argv) and argv[argv.index("--workspace") + 1] == str(ws)
    assert_nothing_left(agent)


def test_cursor_without_force_cannot_run_check(cursor_standin: Path, workspace: Path) -> None:
    with ScriptedModelServer(cursor_script(workspace)) as server:
        agent = create_agent("cursor", executable=str(cursor_standin), force=False,
                             env={"CURSOR_API_KEY": "k", "CURSOR_STANDIN_BASE_URL": server.openai_base_url})
        proposal = agent.propose(request(workspace))
    assert proposal.source == NEW_KERNEL
    rejected = [e for e in read_events(proposal.log_path) if e.get("subtype") == "completed"
                and "rejected" in json.dumps(e)]
    assert len(rejected) == 1


# --- the generic template -------------------------------------------------------------------------

TOOL = '''\
import argparse, json, os, pathlib, sys
p = argparse.ArgumentParser()
p.add_argument("--prompt"); p.add_argument("--cwd"); p.add_argument("--model"); p.add_argument("--limit")
a = p.parse_args()
prompt = pathlib.Path(a.prompt).read_text()
pathlib.Path(a.cwd, "kernel.py").write_text("# written by mytool\\n")
pathlib.Path(a.cwd, "seen.json").write_text(json.dumps({"argv": sys.argv, "cwd": os.getcwd(),
    "env": dict(os.environ), "prompt": prompt}))
print("thinking...")
print("mytool: wrote kernel.py")
'''


def test_cli_template_runs_the_command_with_placeholders(workspace: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    tool = tmp_path / "my tool.py"
    tool.write_text(TOOL)
    monkeypatch.setenv("KERNELLAB_TEST_SECRET", "do-not-pass")
    monkeypatch.setenv("MYTOOL_KEY", "k-123")
    agent = create_agent("cli", command=f"{sys.executable} '{tool}' --prompt {{prompt_file}} --cwd {{workspace}} "
                                        f"--model {{model}} --limit {{timeout_s}}",
                         model="my-model", api_key_env="MYTOOL_KEY", timeout_s=120, env={"EXTRA": "1"})
    proposal = agent.propose(request(workspace, instructions="Use vectorized loads."))
    seen = json.loads((workspace / "seen.json").read_text())
    assert proposal.source == "# written by mytool\n"
    assert proposal.note.endswith("mytool: wrote kernel.py")
    assert seen["argv"][1:] == ["--prompt", seen["argv"][2], "--cwd", str(workspace), "--model", "my-model",
                                "--limit", "120"]
    assert "Use vectorized loads." in seen["prompt"] and seen["cwd"] == str(workspace)
    env = seen["env"]
    assert env["HOME"] != os.environ.get("HOME") and not Path(env["HOME"]).exists()  # private, then removed
    assert "KERNELLAB_TEST_SECRET" not in env and env["MYTOOL_KEY"] == "k-123" and env["EXTRA"] == "1"
    assert proposal.log_path.read_text().startswith("thinking...")
    assert proposal.usage.tokens_in is None and proposal.usage.wall_s > 0


def test_cli_template_timeout(workspace: Path) -> None:
    agent = create_agent("cli", command="sh -c ./slow", timeout_s=2)
    start = time.monotonic()
    proposal = agent.propose(request(workspace))
    assert proposal.timed_out and time.monotonic() - start < 2 + 6
    assert_nothing_left(agent)


def test_wrap_lets_the_caller_confine(workspace: Path, tmp_path: Path) -> None:
    seen = {}

    def wrap(argv, ws, env):
        seen.update(argv=argv, ws=ws, home=env["HOME"])
        return ["env", "WRAPPED=1", *argv], True

    agent = create_agent("cli", command="sh -c 'echo wrapped=$WRAPPED'", wrap=wrap)
    proposal = agent.propose(request(workspace))
    assert proposal.note == "wrapped=1"
    assert agent.last_run.confined and agent.last_run.argv[:2] == ("env", "WRAPPED=1")
    assert seen["ws"] == workspace.resolve() and seen["argv"][-1] == "echo wrapped=$WRAPPED"
    # A confinement binds the workspace read-write, so the run's private HOME lived in it, and is gone.
    assert Path(seen["home"]).is_relative_to(workspace.resolve() / ".kernellab")
    assert not Path(seen["home"]).exists()


# --- options, availability -------------------------------------------------------------------------

def test_adapters_are_registered() -> None:
    assert {"claude-code", "codex", "cursor", "cli"} <= set(registered())


def test_availability_names_the_cli_and_its_version(claude: Path, codex: Path) -> None:
    for name, word in (("claude-code", "claude"), ("codex", "codex")):
        availability = registered()[name].availability()
        assert availability.usable, availability.why
        assert availability.why.startswith(word) and " at /" in availability.why


def test_availability_says_why_not(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", os.pathsep.join([str(tmp_path), "/usr/bin", "/bin"]))  # python3, no CLIs
    monkeypatch.setenv(CLIS_DIR_ENV, str(tmp_path))
    availability = registered()["cursor"].availability()
    assert not availability.usable and "cursor-agent not found" in availability.why
    monkeypatch.setenv(CLIS_DIR_ENV, str(STANDIN_BIN))
    availability = registered()["cursor"].availability()
    assert availability.usable and availability.why.startswith("cursor-agent 2026.08.11-standin at ")


def test_bad_options_are_one_line_errors(cursor_standin: Path) -> None:
    with pytest.raises(AgentError, match="unknown option 'temprature'"):
        create_agent("cli", command="true", temprature=0.5)
    with pytest.raises(AgentError, match="no API key"):
        create_agent("cursor", executable=str(cursor_standin))
    with pytest.raises(AgentError, match="base_url is not supported"):
        create_agent("cursor", executable=str(cursor_standin), base_url="http://x", env={"CURSOR_API_KEY": "k"})
    with pytest.raises(AgentError, match="bad placeholder"):
        create_agent("cli", command="true {prompt_fle}")
    with pytest.raises(AgentError, match="not found"):
        create_agent("cursor", executable="/nonexistent/cursor-agent", env={"CURSOR_API_KEY": "k"})
    with pytest.raises(AgentError, match="not an executable"):
        create_agent("cli", command="no-such-tool-here {workspace}")


def test_options_given_as_text_are_converted(claude: Path) -> None:
    agent = create_agent("claude-code", max_turns="7", max_budget_usd="2.5", tools="Bash,Read",
                         env="ANTHROPIC_API_KEY=k,X=1", timeout_s="90")
    assert agent.options.max_turns == 7 and agent.options.max_budget_usd == 2.5
    assert agent.options.tools == ("Bash", "Read") and agent.options.env == {"ANTHROPIC_API_KEY": "k", "X": "1"}
    with pytest.raises(AgentError, match="permission_mode"):
        create_agent("claude-code", permission_mode="yolo", env={"ANTHROPIC_API_KEY": "k"})


def test_api_key_comes_from_the_named_variable(claude: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_ANTHROPIC_KEY", "sk-mine")
    agent = create_agent("claude-code", api_key_env="MY_ANTHROPIC_KEY")
    assert agent.key_vars() == {"ANTHROPIC_API_KEY": "sk-mine"}
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "tok")
    assert create_agent("claude-code").key_vars() == {"ANTHROPIC_AUTH_TOKEN": "tok"}


# --- stream readers on the edges ---------------------------------------------------------------------

def test_claude_report_without_a_result_event() -> None:
    events = [{"type": "assistant", "message": {"id": "m1", "usage": {"input_tokens": 10, "output_tokens": 2},
                                                "content": [{"type": "text", "text": "hi"}]}},
              {"type": "assistant", "message": {"id": "m1", "usage": {"input_tokens": 10, "output_tokens": 2},
                                                "content": [{"type": "tool_use", "name": "Bash"}]}},
              {"type": "assistant", "message": {"id": "m2", "usage": {"input_tokens": 30, "output_tokens": 5,
                                                                      "cache_read_input_tokens": 7},
                                                "content": []}}]
    report = claude_report(events)
    assert (report.tokens_in, report.tokens_out, report.steps) == (47, 7, 1)
    assert report.final_text == "hi" and report.error == "no result event" and report.cost_usd is None


def test_codex_report_of_a_failed_turn() -> None:
    report = codex_report([{"type": "thread.started"}, {"type": "turn.started"},
                           {"type": "turn.failed", "error": {"message": "unexpected status 401"}}])
    assert report.error == "unexpected status 401" and report.tokens_in is None


def test_cursor_report_of_an_error_result() -> None:
    report = cursor_report([{"type": "result", "subtype": "error", "is_error": True, "result": "denied"}])
    assert report.error == "denied" and report.tokens_in is None


def test_read_events_skips_what_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('WARNING: something\n{"type": "a"}\n{broken\n[1]\n{"type": "b"}\n')
    assert [e["type"] for e in read_events(path)] == ["a", "b"]


def test_prompt_says_where_what_and_how_long(tmp_path: Path) -> None:
    from kernellab.agents.cli.prompt import MAX_OTHER_CHARS, build_prompt

    prompt = build_prompt(request(tmp_path, instructions="Fuse the two loops.", feedback="edge 1/3 correct",
                                  others=("A" * 100, "B" * MAX_OTHER_CHARS)), time_limit_s=600)
    assert str(tmp_path) in prompt and "TASK.md" in prompt and "./check" in prompt and "kernel.py" in prompt
    assert "Fuse the two loops." in prompt and "edge 1/3 correct" in prompt
    assert "A" * 100 in prompt and "(cut)" in prompt and "You have 10 minutes" in prompt
    assert "You have 45 seconds" in build_prompt(request(tmp_path, deadline_s=45))
