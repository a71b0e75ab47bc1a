"""``codex``: OpenAI's Codex CLI, headless.

    codex exec --json --skip-git-repo-check --ephemeral --color never --sandbox workspace-write
               -C WORKSPACE [-m M] PROMPT

with ``CODEX_HOME`` a private directory holding a ``config.toml`` written for the run: approval policy
``never``, no update check, no analytics, and one model provider, ``kernellab``, whose ``base_url`` is
the endpoint (``base_url`` option, else ``$OPENAI_BASE_URL``, else OpenAI's) spoken to with the
Responses API (``wire_api = "responses"``, the only one this Codex supports), its key read from
``OPENAI_API_KEY``. Codex refuses to put its sandbox helper under the temporary directory, so the run's
``TMPDIR`` is a folder of the private directory. ``turn.completed`` reports tokens; no cost.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from kernellab.agents.base import register
from kernellab.agents.cli.cli_agent import CLIAgent, CLIOptions, RunFiles
from kernellab.agents.cli.streams import StreamReport, codex_report, read_events

SANDBOXES = ("workspace-write", "danger-full-access", "read-only")
OPENAI_URL = "https://api.openai.com/v1"
PROVIDER = "kernellab"


@dataclass(frozen=True)
class CodexOptions(CLIOptions):
    # Codex's own sandbox for the commands it runs; "danger-full-access" when the caller confines it
    # (wrap) and a nested sandbox cannot start.
    sandbox: str = "workspace-write"
    # Network inside that sandbox: on, because ./check talks to kernellab over local sockets (its
    # check service, its fork server), which Codex's network filter also blocks. Limit the network
    # outside (wrap) instead.
    sandbox_network: bool = True
    reasoning_effort: str | None = None  # model_reasoning_effort: minimal, low, medium, high...

    def __post_init__(self) -> None:
        if self.sandbox not in SANDBOXES:
            raise ValueError(f"sandbox must be one of {', '.join(SANDBOXES)}")


@register("codex")
class CodexAgent(CLIAgent):
    executable_name = "codex"
    Options = CodexOptions
    key_env = ("OPENAI_API_KEY",)

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.require_key()

    def config_toml(self) -> str:
        o: CodexOptions = self.options  # type: ignore[assignment]
        base_url = (o.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")
        lines = []
        if o.model:
            lines.append(f"model = {json.dumps(o.model)}")
        if o.reasoning_effort:
            lines.append(f"model_reasoning_effort = {json.dumps(o.reasoning_effort)}")
        lines += [
            f'model_provider = "{PROVIDER}"',
            'approval_policy = "never"',
            f"sandbox_mode = {json.dumps(o.sandbox)}",
            "check_for_update_on_startup = false",
            "allow_login_shell = false",  # a login shell would reset PATH from /etc/profile
            "",
            "[sandbox_workspace_write]",
            f"network_access = {'true' if o.sandbox_network else 'false'}",
            "",
            "[analytics]",
            "enabled = false",
            "",
            "[history]",
            'persistence = "none"',
            "",
            f"[model_providers.{PROVIDER}]",
            f'name = "{PROVIDER}"',
            f"base_url = {json.dumps(base_url)}",
            f'env_key = "{self.key_env[0]}"',
            'wire_api = "responses"',
        ]
        return "\n".join(lines) + "\n"

    def prepare(self, files: RunFiles) -> None:
        (files.private / "codex-home").mkdir()
        (files.private / "tmp").mkdir()
        (files.private / "codex-home" / "config.toml").write_text(self.config_toml())

    def command(self, executable: Path, files: RunFiles) -> list[str]:
        o: CodexOptions = self.options  # type: ignore[assignment]
        argv = [str(executable), "exec", "--json", "--skip-git-repo-check", "--ephemeral", "--color", "never",
                "--sandbox", o.sandbox, "-C", str(files.workspace)]
        if o.model:
            argv += ["-m", o.model]
        return argv

    def cli_env(self, files: RunFiles) -> dict[str, str]:
        return {"CODEX_HOME": str(files.private / "codex-home"), "TMPDIR": str(files.private / "tmp"),
                **self.key_vars()}

    def report(self, transcript: Path) -> StreamReport:
        return codex_report(read_events(transcript))
