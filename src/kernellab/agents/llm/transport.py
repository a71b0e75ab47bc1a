"""Model calls through the official SDKs (``openai``, ``anthropic``) with kernellab's own retries.

The SDKs speak the wire formats (requests, server-sent events, error bodies); this module runs one
SDK call under kernellab's retry policy and deadline. The SDK clients are built with
``max_retries=0`` so that every retry is kernellab's: it is written to the transcript, honours the
proposal's deadline, and repeats the whole request (stream included). The SDKs are an optional
dependency (the ``llm`` extra): this module imports without them, and :func:`import_sdk` turns their
absence into one line that names the extra.
"""

from __future__ import annotations

import importlib
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

from kernellab.agents.base import AgentError
from kernellab.agents.llm.retry import (
    RetryPolicy,
    is_retryable_status,
    parse_retry_after,
)

log = logging.getLogger(__name__)

EXTRA = "llm"
INSTALL_HINT = f"pip install 'kernellab[{EXTRA}]'"
SDKS = ("openai", "anthropic")

T = TypeVar("T")


def sdk_available(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def import_sdk(name: str) -> Any:
    """The ``openai`` or ``anthropic`` package, or an ``AgentError`` naming the extra."""
    try:
        return importlib.import_module(name)
    except ImportError:
        raise AgentError(f"the api agent needs the {name} package: {INSTALL_HINT}") from None


class ApiError(Exception):
    """A model call that failed; ``retryable`` says whether the same request may succeed later."""

    def __init__(self, message: str, *, status: int | None = None, retryable: bool = False,
                 retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.retry_after = retry_after


class DeadlineReached(Exception):
    """The proposal's deadline passed while waiting for the model."""


def error_message(payload: Any, fallback: str) -> str:
    """The human part of an error body in the OpenAI or Anthropic format."""
    if isinstance(payload, dict):
        error = payload.get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
        if isinstance(error, str):
            return error
        if payload.get("message"):
            return str(payload["message"])
    return fallback.strip()[:300] or "(empty body)"


class ModelTransport:
    """Runs SDK calls with kernellab's retries: a retryable failure (rate limit, overload, a server
    error, a dropped connection, a stream that broke off) repeats the whole call after the policy's
    wait, within the deadline; ``on_retry(attempt, error, wait_s)`` is told of each repeat."""

    def __init__(self, timeout_s: float, retry: RetryPolicy,
                 on_retry: Callable[[int, ApiError, float], None] | None = None) -> None:
        self.timeout_s = timeout_s
        self.retry = retry
        self.on_retry = on_retry

    def call(self, where: str, send: Callable[[float], T], deadline: float | None) -> T:
        """``send(timeout_s)`` makes one SDK call and reads its whole answer; it may raise
        :class:`ApiError` itself (a reply that is not complete)."""
        attempt = 0
        while True:
            timeout, by_deadline = self._timeout(deadline)
            try:
                return send(timeout)
            except DeadlineReached:
                raise
            except ApiError as exc:
                error = exc
            except Exception as exc:  # noqa: BLE001 - an SDK's or httpx's error, mapped below
                if _is_timeout(exc):
                    if by_deadline:
                        raise DeadlineReached(f"no answer from {where} before the deadline") from None
                    error = ApiError(f"no answer from {where} within {timeout:g}s", retryable=True)
                else:
                    error = _api_error(exc, where)
            if not error.retryable:
                raise error
            if attempt >= self.retry.max_retries:
                raise ApiError(f"{error} (gave up after {attempt + 1} tries)", status=error.status)
            wait = self.retry.wait_s(attempt, error.retry_after)
            if deadline is not None and time.monotonic() + wait >= deadline:
                raise ApiError(f"{error} (no time left before the deadline to try again)", status=error.status)
            log.info("model call failed (%s); try %d in %.2fs", error, attempt + 2, wait)
            if self.on_retry is not None:
                self.on_retry(attempt + 1, error, wait)
            time.sleep(wait)
            attempt += 1

    def _timeout(self, deadline: float | None) -> tuple[float, bool]:
        if deadline is None:
            return self.timeout_s, False
        left = deadline - time.monotonic()
        if left <= 0:
            raise DeadlineReached("the deadline passed before the model call")
        return (left, True) if left < self.timeout_s else (self.timeout_s, False)


def check_deadline(deadline: float | None) -> None:
    """Called between the events of a streamed answer."""
    if deadline is not None and time.monotonic() > deadline:
        raise DeadlineReached("the deadline passed while the model was answering")


def _names(exc: BaseException) -> set[str]:
    return {c.__name__ for c in type(exc).__mro__}


def _is_timeout(exc: BaseException) -> bool:
    """Both SDKs' ``APITimeoutError``, or httpx's timeout while a stream is read."""
    return bool(_names(exc) & {"APITimeoutError", "TimeoutException"})


def _api_error(exc: Exception, where: str) -> ApiError:
    """An SDK exception as an :class:`ApiError` that says whether to try again; anything else raises."""
    names = _names(exc)
    if "APIStatusError" in names:
        status = exc.status_code  # type: ignore[attr-defined]
        response = exc.response  # type: ignore[attr-defined]
        message = error_message(exc.body, str(exc))  # type: ignore[attr-defined]
        if status < 400:  # an error event inside a stream that had started well (overload, ...)
            return ApiError(f"the stream reported an error: {message}", retryable=True)
        return ApiError(f"HTTP {status} from {where}: {message}", status=status,
                        retryable=is_retryable_status(status), retry_after=parse_retry_after(response.headers))
    if "APIConnectionError" in names or (type(exc).__module__.startswith("httpx") and "TransportError" in names):
        return ApiError(f"connection to {where} failed: {type(exc).__name__}: {exc}", retryable=True)
    if "APIError" in names:  # an error chunk in a stream, a reply the SDK could not read
        return ApiError(f"the server answered an error: {exc}", retryable=True)
    raise exc
