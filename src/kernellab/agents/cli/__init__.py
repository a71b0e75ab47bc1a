"""Whole-agent CLIs as proposers: Claude Code (``claude-code``), Codex (``codex``), Cursor (``cursor``)
and any command from a template (``cli``). Importing this package registers them."""

from kernellab.agents.cli import claude_code, codex, cursor, generic  # noqa: F401 - registers the adapters
