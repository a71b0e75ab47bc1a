"""``claude-code``: Anthropic's Claude Code CLI, headless.

    claude -p PROMPT --output-format stream-json --verbose --permission-mode acceptEdits
           --tools Bash,Read,Write,Edit,Glob,Grep --allowedTools Bash,Read,Write,Edit,Glob,Grep
           --strict-mcp-config --no-session-persistence [--model M] [--max-turns N] [--max-budget-usd D]

``acceptEdits`` with the tools pre-approved lets it edit files and run ``./check`` without a prompt
(``--dangerously-skip-permissions`` is refused when run as root, and is not needed); ``--tools``
limits what it has to those (no web, no subagents). Endpoint and key: ``ANTHROPIC_BASE_URL``,
``ANTHROPIC_API_KEY`` (or ``ANTHROPIC_AUTH_TOKEN``). The final ``result`` event reports usage,
``total_cost_usd`` and ``num_turns``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kernellab.agents.base import register
from kernellab.agents.cli.cli_agent import CLIAgent, CLIOptions, RunFiles
from kernellab.agents.cli.streams import StreamReport, claude_report, read_events

TOOLS = ("Bash", "Read", "Write", "Edit", "Glob", "Grep")
PERMISSION_MODES = ("acceptEdits", "default", "dontAsk", "auto", "plan", "bypassPermissions")

# Switches that keep it from updating itself or calling anything but the model endpoint.
QUIET_ENV = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


@dataclass(frozen=True)
class ClaudeCodeOptions(CLIOptions):
    max_turns: int | None = None  # --max-turns: model turns in one proposal
    max_budget_usd: float | None = None  # --max-budget-usd: dollars in one proposal
    tools: tuple[str, ...] = TOOLS  # what it has, all pre-approved
    permission_mode: str = "acceptEdits"

    def __post_init__(self) -> None:
        if self.permission_mode not in PERMISSION_MODES:
            raise ValueError(f"permission_mode must be one of {', '.join(PERMISSION_MODES)}")
        if self.max_turns is not None and self.max_turns < 1:
            raise ValueError("max_turns must be at least 1")


@register("claude-code")
class ClaudeCodeAgent(CLIAgent):
    executable_name = "claude"
    Options = ClaudeCodeOptions
    key_env = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.require_key()

    def command(self, executable: Path, files: RunFiles) -> list[str]:
        o: ClaudeCodeOptions = self.options  # type: ignore[assignment]
        tools = ",".join(o.tools)
        argv = [str(executable), "--print", "--output-format", "stream-json", "--verbose",
                "--permission-mode", o.permission_mode, "--tools", tools, "--allowedTools", tools,
                "--strict-mcp-config", "--no-session-persistence"]
        if o.model:
            argv += ["--model", o.model]
        if o.max_turns is not None:
            argv += ["--max-turns", str(o.max_turns)]
        if o.max_budget_usd is not None:
            argv += ["--max-budget-usd", f"{o.max_budget_usd:g}"]
        return argv

    def cli_env(self, files: RunFiles) -> dict[str, str]:
        env = dict(QUIET_ENV) | self.key_vars()
        base_url = self.options.base_url or os.environ.get("ANTHROPIC_BASE_URL")
        if base_url:
            env["ANTHROPIC_BASE_URL"] = base_url.rstrip("/")
        return env

    def report(self, transcript: Path) -> StreamReport:
        return claude_report(read_events(transcript))


