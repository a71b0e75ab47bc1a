"""When and how long to wait before repeating a failed model call.

Rate limits (429), overload (529, Anthropic's), server errors (5xx), request timeouts (408) and
broken connections are worth another try; other client errors (400, 401, 403, 404) are not: the
same request would fail the same way. The wait doubles from ``backoff_s`` up to ``max_backoff_s``,
each drawn between half and all of that ("equal jitter", so that many agents rate-limited together
do not come back together), unless the server says how long with ``retry-after-ms`` or
``retry-after`` (seconds or an HTTP date), which is obeyed up to ``max_backoff_s``.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


def is_retryable_status(status: int) -> bool:
    return status in RETRYABLE_STATUS or status >= 500


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the server asks us to wait, from ``retry-after-ms`` or ``retry-after``; None if absent."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if (ms := lowered.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 5  # repeats after the first try
    backoff_s: float = 1.0
    max_backoff_s: float = 60.0

    def wait_s(self, attempt: int, retry_after: float | None = None, rng: random.Random | None = None) -> float:
        """Seconds to wait before repeat number ``attempt + 1`` (``attempt`` counts from 0)."""
        if retry_after is not None:
            return min(retry_after, self.max_backoff_s)
        ceiling = min(self.max_backoff_s, self.backoff_s * (2 ** attempt))
        return (rng or random).uniform(ceiling / 2, ceiling)
