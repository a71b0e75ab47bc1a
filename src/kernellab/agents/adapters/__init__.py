"""The built-in agent adapters; importing this package registers them."""
import kernellab.agents.cli  # noqa: F401 - registers "claude-code", "codex", "cursor", "cli"
from kernellab.agents.adapters import (
    llm_api,  # noqa: F401 - registers "api"
    replay,  # noqa: F401 - registers "replay"
    search,  # noqa: F401 - registers "search"
)
