"""``api``: a model behind an HTTP API (OpenAI Chat Completions or Anthropic Messages) working the
workspace through four tools (read_file, write_kernel, run_check, finish) in a loop of its own.

Any OpenAI-compatible server works (vLLM, SGLang, Ollama, hosted gateways) through ``base_url``.
The official ``openai`` and ``anthropic`` SDKs are the ``llm`` extra; without them the agent says how
to install it. See
docs/agents-llm.md for the options, budgets and retries.
"""

from __future__ import annotations

import importlib.metadata
import os
import time
from pathlib import Path
from typing import Any

from kernellab.agents.base import (
    Agent,
    AgentError,
    Availability,
    Proposal,
    ProposalRequest,
    register,
)
from kernellab.agents.llm.anthropic_messages import AnthropicMessagesClient
from kernellab.agents.llm.openai_chat import OpenAIChatClient
from kernellab.agents.llm.options import (
    DEFAULT_BASE_URL_ENV,
    DEFAULT_KEY_ENV,
    ApiAgentOptions,
)
from kernellab.agents.llm.pricing import resolve_price
from kernellab.agents.llm.prompt import SYSTEM_PROMPT, first_message
from kernellab.agents.llm.retry import RetryPolicy
from kernellab.agents.llm.tool_loop import LoopLimits, Transcript, run_tool_loop
from kernellab.agents.llm.tools import KERNEL_FILE, TOOL_SPECS, WorkspaceTools
from kernellab.agents.llm.transport import (
    INSTALL_HINT,
    SDKS,
    ModelTransport,
    import_sdk,
    sdk_available,
)

_STOPS = {
    "finished": "",
    "no_tool_call": "the model stopped calling tools without calling finish",
    "max_steps": "stopped at max_steps={max_steps} model turns",
    "token_budget": "stopped: the token budget ({token_budget}) is spent",
    "dollar_budget": "stopped: the dollar budget (${dollar_budget:g}) is spent",
    "deadline": "stopped at the deadline",
    "error": "the model call failed",
}


@register("api")
class ApiAgent(Agent):
    """Options: see :class:`kernellab.agents.llm.options.ApiAgentOptions`."""

    uses_llm = True

    @classmethod
    def availability(cls) -> Availability:
        missing = [name for name in SDKS if not sdk_available(name)]
        if missing:
            return Availability(False, f"{' and '.join(missing)} not installed: {INSTALL_HINT}")
        variables = list(DEFAULT_KEY_ENV.values()) + list(DEFAULT_BASE_URL_ENV.values())
        found = [name for name in variables if os.environ.get(name)]
        versions = ", ".join(f"{name} {importlib.metadata.version(name)}" for name in SDKS)
        if not found:
            return Availability(False, f"{versions}, but none of {', '.join(variables)} is set "
                                       "(or pass base_url=... for a local server)")
        return Availability(True, f"{versions}; {', '.join(found)} set")

    def __init__(self, **options: Any) -> None:
        self.options = ApiAgentOptions.parse(options)
        import_sdk(self.options.provider)
        o = self.options
        if o.resolved_base_url() is None and not os.environ.get(o.key_env):
            raise AgentError(f"api agent: ${o.key_env} is not set (and no base_url is given for a server "
                             "that needs no key)")
        self.price = resolve_price(o.model, o.price_in_per_mtok, o.price_out_per_mtok)
        if o.dollar_budget is not None and self.price is None:
            raise AgentError(f"api agent: a dollar_budget needs a price, and {o.model!r} has none in the table: "
                             "give price_in_per_mtok and price_out_per_mtok")

    def propose(self, request: ProposalRequest) -> Proposal:
        o = self.options
        started = time.monotonic()
        deadline = None if request.deadline_s is None else started + request.deadline_s
        workspace = Path(request.workspace)
        log_path = transcript_path(workspace, request.iteration)
        with Transcript(log_path) as transcript:
            transport = ModelTransport(o.timeout_s, RetryPolicy(o.max_retries, o.backoff_s, o.max_backoff_s),
                                      on_retry=lambda attempt, error, wait: transcript.write(
                                          "retry", attempt=attempt, error=str(error), status=error.status,
                                          wait_s=round(wait, 3)))
            client = self._client(transport)
            transcript.write("start", provider=o.provider, model=o.model, url=client.url, task=request.task_id,
                             iteration=request.iteration, stream=o.stream, system=SYSTEM_PROMPT,
                             tools=[t.name for t in TOOL_SPECS])
            tools = WorkspaceTools(workspace, check_timeout_s=o.check_timeout_s, hidden_env=(o.key_env,))
            limits = LoopLimits(o.max_steps, o.token_budget, o.dollar_budget, deadline)
            try:
                outcome = run_tool_loop(client, tools, TOOL_SPECS, SYSTEM_PROMPT, first_message(request), limits,
                                        self.price, transcript)
            finally:
                client.close()
        source = (workspace / KERNEL_FILE).read_text() if tools.kernel_writes else None
        return Proposal(source, outcome.usage, self._note(outcome, source is None), log_path,
                        timed_out=outcome.reason == "deadline")

    def _client(self, transport: ModelTransport) -> OpenAIChatClient | AnthropicMessagesClient:
        o = self.options
        kind = AnthropicMessagesClient if o.provider == "anthropic" else OpenAIChatClient
        return kind(transport, model=o.model, base_url=o.resolved_base_url(), api_key=os.environ.get(o.key_env),
                    max_tokens=o.max_tokens, temperature=o.temperature, stream=o.stream)

    def _note(self, outcome: Any, no_source: bool) -> str:
        o = self.options
        parts = []
        if outcome.reason == "finished":
            parts.append(outcome.summary or "finished")
        else:
            parts.append(_STOPS[outcome.reason].format(**vars(o)))
            if outcome.error:
                parts.append(outcome.error)
        if no_source:
            parts.append("kernel.py was not written")
        if self.price is None:
            parts.append(f"cost unknown: no price for {o.model!r} (give price_in_per_mtok and price_out_per_mtok)")
        return "; ".join(p for p in parts if p)


def transcript_path(workspace: Path, iteration: int) -> Path:
    """Beside the workspace (not in it: the model cannot read its own log, the final check does
    not see it): ``<workspace>.api-<iteration>.jsonl``."""
    return workspace.parent / f"{workspace.name}.api-{iteration}.jsonl"
