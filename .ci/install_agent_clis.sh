#!/usr/bin/env bash
# Installs the agent CLIs that tests/agents/test_cli_agents.py drives (Claude Code, Codex) from the
# npm registry into a prefix, pinned, and prints the folder that holds their executables.
#
#   bash .ci/install_agent_clis.sh [PREFIX]        # PREFIX defaults to $HOME/.kernellab-agent-clis
#   export KERNELLAB_AGENT_CLIS="$(bash .ci/install_agent_clis.sh PREFIX | tail -n 1)"
#
# Both packages carry their native executables as platform packages (optionalDependencies), so
# nothing outside the registry is downloaded. Cursor's CLI is not published there: its adapter is
# tested against tests/agents/bin/cursor-agent.
set -euo pipefail

CLAUDE_CODE_VERSION="2.1.330"
CODEX_VERSION="0.169.0"

PREFIX="${1:-${KERNELLAB_AGENT_CLIS_PREFIX:-$HOME/.kernellab-agent-clis}}"
mkdir -p "$PREFIX"
PREFIX="$(cd "$PREFIX" && pwd)"

if ! command -v npm >/dev/null 2>&1; then
    echo "install_agent_clis: npm not found (apt-get install -y nodejs npm)" >&2
    exit 1
fi

# --include=optional: the native executables are optional dependencies; --no-fund/--no-audit: quiet.
npm install --prefix "$PREFIX" --no-save --no-fund --no-audit --loglevel=error --include=optional \
    "@anthropic-ai/claude-code@${CLAUDE_CODE_VERSION}" "@openai/codex@${CODEX_VERSION}" >&2

BIN="$PREFIX/node_modules/.bin"
for tool in claude codex; do
    if [ ! -x "$BIN/$tool" ]; then
        echo "install_agent_clis: $tool missing from $BIN" >&2
        exit 1
    fi
    echo "$tool $("$BIN/$tool" --version 2>&1 | head -n 1) at $BIN/$tool" >&2
done
echo "$BIN"
