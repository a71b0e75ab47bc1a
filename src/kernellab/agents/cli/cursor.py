"""``cursor``: the Cursor Agent CLI, headless.

    cursor-agent --print --output-format stream-json --trust --force --workspace WORKSPACE [--model M] PROMPT

``--trust`` accepts the workspace without a prompt; ``--force`` lets it run shell commands
(``./check``) without approval. Its key is ``CURSOR_API_KEY``. Cursor talks only to Cursor's service:
there is no endpoint to point elsewhere. The final ``result`` event carries the last text and, where
reported, ``usage`` (``inputTokens``, ``outputTokens``); no cost.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernellab.agents.base import register
from kernellab.agents.cli.cli_agent import CLIAgent, CLIOptions, RunFiles
from kernellab.agents.cli.streams import StreamReport, cursor_report, read_events


@dataclass(frozen=True)
class CursorOptions(CLIOptions):
    force: bool = True  # --force: run shell commands without approval (needed for ./check)

    def __post_init__(self) -> None:
        if self.base_url:
            raise ValueError("cursor-agent has no model endpoint to set: base_url is not supported")


@register("cursor")
class CursorAgent(CLIAgent):
    executable_name = "cursor-agent"
    Options = CursorOptions
    key_env = ("CURSOR_API_KEY",)
    install_hint = "install the Cursor Agent CLI, or set executable=PATH"

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.require_key()

    def command(self, executable: Path, files: RunFiles) -> list[str]:
        o: CursorOptions = self.options  # type: ignore[assignment]
        argv = [str(executable), "--print", "--output-format", "stream-json", "--trust",
                "--workspace", str(files.workspace)]
        if o.force:
            argv.append("--force")
        if o.model:
            argv += ["--model", o.model]
        return argv

    def cli_env(self, files: RunFiles) -> dict[str, str]:
        return self.key_vars()

    def report(self, transcript: Path) -> StreamReport:
        return cursor_report(read_events(transcript))
