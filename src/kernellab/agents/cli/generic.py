"""``cli``: any command-line agent, from a command template.

    command = "mytool --prompt {prompt_file} --cwd {workspace}"

The template is split like a shell line (``shlex``), then each word's placeholders are filled, so a
value with spaces stays one argument. Placeholders: ``{prompt_file}`` (the prompt, written to a file),
``{prompt}`` (its text), ``{workspace}``, ``{model}``, ``{timeout_s}`` (the time limit of this
proposal, whole seconds), ``{home}`` (the run's private HOME). The prompt file lives in the run's
private directory (with HOME, the one place besides the workspace a confined run must see). The
command runs in the workspace with the same environment rules as the other adapters (``env=``,
``pass_env=``; ``api_key_env=NAME`` passes that variable on). Its stdout is the transcript, read as
plain text: the note is its last lines; tokens and cost are not reported.
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from kernellab.agents.base import AgentError, Availability, register
from kernellab.agents.cli.cli_agent import CLIAgent, CLIOptions, RunFiles
from kernellab.agents.cli.streams import StreamReport

PLACEHOLDERS = ("prompt_file", "prompt", "workspace", "model", "timeout_s", "home")
NOTE_CHARS = 2000


@dataclass(frozen=True)
class GenericOptions(CLIOptions):
    command: str = ""  # the template

    def __post_init__(self) -> None:
        if not self.command.strip():
            raise ValueError('command is required, e.g. command="mytool --prompt {prompt_file} --cwd {workspace}"')
        try:
            words = shlex.split(self.command)
        except ValueError as e:
            raise ValueError(f"command: {e}") from None
        for word in words:
            try:
                word.format(**{name: "" for name in PLACEHOLDERS})
            except (KeyError, IndexError, ValueError) as e:
                raise ValueError(f"command: bad placeholder in {word!r} ({e}); known: "
                                 f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}") from None


@register("cli")
class GenericCLIAgent(CLIAgent):
    Options = GenericOptions
    transcript_suffix: ClassVar[str] = ".txt"

    def __init__(self, **options) -> None:
        super().__init__(**options)
        self.executable_name = Path(self._words()[0]).name

    @classmethod
    def availability(cls) -> Availability:
        return Availability(True, "runs the command template given as its command option")

    def _words(self) -> list[str]:
        return shlex.split(self.options.command)  # type: ignore[attr-defined]

    def _executable(self) -> Path:
        program = self.options.executable or self._words()[0]  # type: ignore[attr-defined]
        path = Path(program).expanduser()
        if path.parent == Path(".") and not path.is_file():
            found = shutil.which(program)
            path = Path(found) if found else path
        if not (path.is_file() and shutil.which(str(path))):
            raise AgentError(f"cli: {program} is not an executable file or a command on PATH")
        return path.resolve()

    def command(self, executable: Path, files: RunFiles) -> list[str]:
        values = {"prompt_file": str(files.private / "prompt.md"), "prompt": files.prompt,
                  "workspace": str(files.workspace), "model": self.options.model or "",
                  "timeout_s": str(int(files.limit_s)), "home": str(files.home)}
        words = [word.format(**values) for word in self._words()]
        return [str(executable)] + words[1:]

    def prompt_args(self, files: RunFiles) -> list[str]:
        return []

    def prepare(self, files: RunFiles) -> None:
        (files.private / "prompt.md").write_text(files.prompt)

    def cli_env(self, files: RunFiles) -> dict[str, str]:
        if not self.options.api_key_env:
            return {}
        value = os.environ.get(self.options.api_key_env)
        return {self.options.api_key_env: value} if value else {}

    def report(self, transcript: Path) -> StreamReport:
        try:
            text = transcript.read_text(errors="replace")
        except OSError:
            text = ""
        return StreamReport(final_text=text.strip()[-NOTE_CHARS:])
