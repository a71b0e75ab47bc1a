"""HTTP for the model clients: httpx, imported only when an agent is built, with retries.

httpx is an optional dependency (the ``llm`` extra): this module imports without it, and
:func:`import_httpx` turns its absence into one line that names the extra.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator
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

T = TypeVar("T")


def httpx_available() -> bool:
    try:
        import httpx  # noqa: F401 - only whether it imports
    except ImportError:
        return False
    return True


def import_httpx() -> Any:
    try:
        import httpx
    except ImportError:
        raise AgentError(f"the api agent needs the httpx package: {INSTALL_HINT}") from None
    return httpx


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


def iter_sse(lines: Iterator[str]) -> Iterator[tuple[str | None, str]]:
    """Server-sent events as ``(event name or None, data)``; comments and ids are skipped."""
    name: str | None = None
    data: list[str] = []
    for line in lines:
        if line == "":
            if data:
                yield name, "\n".join(data)
            name, data = None, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
    if data:
        yield name, "\n".join(data)


class HttpTransport:
    """POSTs JSON to a model endpoint and hands the response to a reader, repeating the whole
    request (stream included) on retryable failures within the deadline."""

    def __init__(self, timeout_s: float, retry: RetryPolicy,
                 on_retry: Callable[[int, ApiError, float], None] | None = None) -> None:
        self._httpx = import_httpx()
        self.timeout_s = timeout_s
        self.retry = retry
        self.on_retry = on_retry
        self._client = self._httpx.Client(timeout=timeout_s)

    def close(self) -> None:
        self._client.close()

    def post(self, url: str, headers: dict[str, str], body: dict[str, Any], deadline: float | None,
             read: Callable[[Any, float | None], T]) -> T:
        """Send ``body``; ``read(response, deadline)`` turns a 2xx response into the result and may
        raise :class:`ApiError` (a stream that broke off, an error event)."""
        httpx = self._httpx
        attempt = 0
        while True:
            timeout, by_deadline = self._timeout(deadline)
            try:
                with self._client.stream("POST", url, json=body, headers=headers, timeout=timeout) as response:
                    if response.status_code >= 400:
                        raise self._http_error(url, response)
                    return read(response, deadline)
            except httpx.TimeoutException:
                if by_deadline:
                    raise DeadlineReached(f"no answer from {url} before the deadline") from None
                error = ApiError(f"no answer from {url} within {timeout:g}s", retryable=True)
            except httpx.TransportError as exc:
                error = ApiError(f"connection to {url} failed: {type(exc).__name__}: {exc}", retryable=True)
            except ApiError as exc:
                error = exc
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

    @staticmethod
    def _http_error(url: str, response: Any) -> ApiError:
        response.read()
        text = response.text
        try:
            payload = json.loads(text)
        except ValueError:
            payload = None
        status = response.status_code
        return ApiError(f"HTTP {status} from {url}: {error_message(payload, text)}", status=status,
                        retryable=is_retryable_status(status), retry_after=parse_retry_after(response.headers))


def sse_events(response: Any, deadline: float | None) -> Iterator[tuple[str | None, str]]:
    """The events of a streamed response, stopping at the deadline."""
    for event in iter_sse(response.iter_lines()):
        if deadline is not None and time.monotonic() > deadline:
            raise DeadlineReached("the deadline passed while the model was answering")
        yield event


def read_json(response: Any) -> Any:
    response.read()
    try:
        return json.loads(response.text)
    except ValueError:
        raise ApiError(f"the server answered with something that is not JSON: {response.text[:200]!r}",
                       retryable=True) from None
