"""The ``api`` agent's options: defaults, types (strings from a command line are converted) and
checks, resolved once into a frozen record."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kernellab.agents.base import AgentError, parse_flag, parse_number

PROVIDERS = ("openai", "anthropic")
DEFAULT_KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
DEFAULT_BASE_URL_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


@dataclass(frozen=True)
class ApiAgentOptions:
    provider: str = "openai"  # "openai": Chat Completions; "anthropic": Messages
    model: str = ""  # required
    base_url: str | None = None  # default: $OPENAI_BASE_URL / $ANTHROPIC_BASE_URL, else the vendor's
    api_key_env: str | None = None  # default: OPENAI_API_KEY / ANTHROPIC_API_KEY
    temperature: float | None = None  # None: the server's default
    max_steps: int = 40  # model turns in one proposal
    max_tokens: int = 8192  # per reply
    token_budget: int | None = None  # input + output tokens in one proposal
    dollar_budget: float | None = None  # dollars in one proposal
    price_in_per_mtok: float | None = None  # overrides the price table
    price_out_per_mtok: float | None = None
    stream: bool = False
    timeout_s: float = 300.0  # one HTTP request (the proposal's deadline may cut it shorter)
    check_timeout_s: float = 900.0  # one run of the workspace's check
    max_retries: int = 5
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0

    @classmethod
    def parse(cls, options: dict[str, Any]) -> ApiAgentOptions:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(options) - names)
        if unknown:
            raise AgentError(f"the api agent has no option {', '.join(map(repr, unknown))}; "
                             f"its options: {', '.join(sorted(names))}")
        values = {name: _CONVERT[name](name, value) for name, value in options.items()}
        self = cls(**values)
        self._check()
        return self

    def _check(self) -> None:
        if self.provider not in PROVIDERS:
            raise AgentError(f"api agent: provider must be one of {', '.join(PROVIDERS)}, not {self.provider!r}")
        if not self.model:
            raise AgentError("api agent: give a model (e.g. model=gpt-5 or model=claude-sonnet-4-5)")
        for name in ("max_steps", "max_tokens"):
            if getattr(self, name) < 1:
                raise AgentError(f"api agent: {name} must be at least 1")
        for name in ("token_budget", "dollar_budget", "price_in_per_mtok", "price_out_per_mtok"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise AgentError(f"api agent: {name} must not be negative")
        for name in ("timeout_s", "check_timeout_s", "max_backoff_s"):
            if getattr(self, name) <= 0:
                raise AgentError(f"api agent: {name} must be positive")
        if self.max_retries < 0 or self.backoff_s < 0:
            raise AgentError("api agent: max_retries and backoff_s must not be negative")

    @property
    def key_env(self) -> str:
        return self.api_key_env or DEFAULT_KEY_ENV[self.provider]

    def resolved_base_url(self) -> str | None:
        """The endpoint given, or the provider's base-URL variable; None means the vendor's API."""
        return self.base_url or os.environ.get(DEFAULT_BASE_URL_ENV[self.provider]) or None


def _text(name: str, value: Any) -> str:
    if not isinstance(value, str):
        raise AgentError(f"api agent: {name} must be text, not {value!r}")
    return value


def _optional(convert: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    def run(name: str, value: Any) -> Any:
        if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null")):
            return None
        return convert(name, value)

    return run


def _number(kind: type) -> Callable[[str, Any], Any]:
    def run(name: str, value: Any) -> Any:
        try:
            return parse_number(value, whole=kind is int)
        except ValueError as exc:
            raise AgentError(f"api agent: {name} must be {exc}, not {value!r}") from None

    return run


def _flag(name: str, value: Any) -> bool:
    flag = parse_flag(value)
    if flag is None:
        raise AgentError(f"api agent: {name} must be true or false, not {value!r}")
    return flag


_CONVERT: dict[str, Callable[[str, Any], Any]] = {
    "provider": lambda n, v: _text(n, v).strip().lower(),
    "model": _text,
    "base_url": _optional(_text),
    "api_key_env": _optional(_text),
    "temperature": _optional(_number(float)),
    "max_steps": _number(int),
    "max_tokens": _number(int),
    "token_budget": _optional(_number(int)),
    "dollar_budget": _optional(_number(float)),
    "price_in_per_mtok": _optional(_number(float)),
    "price_out_per_mtok": _optional(_number(float)),
    "stream": _flag,
    "timeout_s": _number(float),
    "check_timeout_s": _number(float),
    "max_retries": _number(int),
    "backoff_s": _number(float),
    "max_backoff_s": _number(float),
}
