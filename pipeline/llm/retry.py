"""When to retry an LLM request and how long to wait before it.

Rate limits (HTTP 429) and transient errors (5xx, timeouts, dropped connections,
unreadable bodies) have separate budgets. A ``Retry-After`` header (seconds or an HTTP
date; also OpenAI's ``retry-after-ms``) is honoured up to ``max_retry_after``; otherwise the
wait is exponential backoff with "equal jitter". The jitter is a hash of the request key
and the attempt number: it spreads concurrent retries apart, is reproducible, and only
ever changes timing, never an answer.
"""

from __future__ import annotations

import email.utils
import time
from collections.abc import Mapping
from dataclasses import dataclass

from pipeline.seeding import stable_fraction


@dataclass(frozen=True)
class RetryPolicy:
    """Retry budgets and backoff bounds (seconds)."""

    max_retries: int = 4
    max_rate_limit_retries: int = 8
    base_delay: float = 0.5
    max_delay: float = 30.0
    max_retry_after: float = 120.0

    def backoff(self, attempt: int, key: str) -> float:
        """Wait before retry number ``attempt`` (0-based) of request ``key``, without a server hint."""
        ceiling = min(self.max_delay, self.base_delay * (2**attempt))
        return ceiling * (0.5 + 0.5 * stable_fraction(key, str(attempt)))

    def wait(self, attempt: int, key: str, retry_after: float | None) -> float:
        """The server's ``Retry-After`` when given (capped), else :meth:`backoff`."""
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_retry_after)
        return self.backoff(attempt, key)


def parse_retry_after(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` headers, or None if absent or unreadable."""
    if not headers:
        return None
    lowered = {str(k).lower(): str(v) for k, v in headers.items()}
    millis = lowered.get("retry-after-ms")
    if millis is not None:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    current = time.time() if now is None else now
    return max(when.timestamp() - current, 0.0)
