"""Request statistics of the LLM client, in the shape the manifest's ``stages[].stats.llm`` entry has.

Definitions (every counter is an integer):

- ``requests``: HTTP requests actually sent to the endpoint, every attempt included
  (first tries, retries after errors, and structured-output repair rounds);
- ``cache_hits``: logical requests answered without the network (request cache, or a
  duplicate of another request in the same batch);
- ``retries``: requests re-sent because the previous attempt hit a rate limit or a
  transient error (an error on the last allowed attempt is not followed by a retry);
- ``rate_limited``: HTTP 429 answers received;
- ``transient_errors``: 5xx answers, timeouts, connection errors and unreadable bodies;
- ``repairs``: requests re-sent because the answer failed structured-output validation;
- ``failures``: logical requests that ended without a valid answer (``failure_reasons``
  counts them by reason);
- ``prompt_tokens`` / ``completion_tokens``: as reported by the server, over all requests;
- ``timeouts``: attempts that got no answer within the client's timeout (also in ``transient_errors``);
- ``concurrency_cuts``: times the adaptive in-flight limit was halved (timeouts, rate limits);
- ``effective_concurrency``: requests in flight on average while any was (time-weighted);
- ``concurrency_limit`` / ``concurrency_cap``: the adaptive limit at the end, and its ceiling;
- ``endpoint``: the base URL with any credentials, query or fragment removed;
- ``model``: the model name sent to the endpoint.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from pipeline.llm.errors import TRANSIENT_ERRORS

COUNTERS = (
    "requests",
    "cache_hits",
    "retries",
    "rate_limited",
    "transient_errors",
    "repairs",
    "failures",
    "prompt_tokens",
    "completion_tokens",
    "timeouts",
    "concurrency_cuts",
)
TIMERS = ("inflight_ms", "busy_ms")  # additive milliseconds behind ``effective_concurrency``


def safe_endpoint(base_url: str | None) -> str | None:
    """``base_url`` without user info, query string or fragment (no secrets in manifests)."""
    if not base_url:
        return None
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


@dataclass
class LLMStats:
    """Thread-safe counters for one client; ``snapshot()`` / ``since()`` give per-stage deltas."""

    endpoint: str | None = None
    model: str | None = None
    concurrency_cap: int | None = None
    concurrency_limit: int | None = None
    counts: Counter[str] = field(default_factory=Counter)
    failure_reasons: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str, amount: int = 1) -> None:
        """Increase counter ``name`` (one of :data:`COUNTERS`) by ``amount``."""
        if name not in COUNTERS:
            raise KeyError(f"unknown LLM counter {name!r}")
        with self._lock:
            self.counts[name] += amount

    def add_time(self, name: str, seconds: float) -> None:
        """Add ``seconds`` to timer ``name`` (one of :data:`TIMERS`)."""
        if name not in TIMERS:
            raise KeyError(f"unknown LLM timer {name!r}")
        with self._lock:
            self.counts[name] += int(round(seconds * 1000))

    def add_failure(self, reason: str) -> None:
        """Count one logical request that ended without a valid answer."""
        with self._lock:
            self.counts["failures"] += 1
            self.failure_reasons[reason] += 1

    def transient_failures(self) -> Counter[str]:
        """Failures so far whose reason is transient (outage, overload, rate limit), by reason."""
        with self._lock:
            return Counter({k: v for k, v in self.failure_reasons.items() if k in TRANSIENT_ERRORS and v})

    def snapshot(self) -> LLMStats:
        """An independent copy (take one before a stage, then call ``since`` after it)."""
        with self._lock:
            return LLMStats(self.endpoint, self.model, self.concurrency_cap, self.concurrency_limit,
                            Counter(self.counts), Counter(self.failure_reasons))

    def since(self, earlier: LLMStats) -> LLMStats:
        """The counts accumulated after ``earlier`` was taken."""
        with self._lock:
            counts = Counter({k: self.counts[k] - earlier.counts[k] for k in COUNTERS + TIMERS})
            reasons = Counter({k: v - earlier.failure_reasons[k] for k, v in self.failure_reasons.items()})
        return LLMStats(self.endpoint, self.model, self.concurrency_cap, self.concurrency_limit, +counts, +reasons)

    def as_dict(self) -> dict[str, Any]:
        """The manifest's ``llm`` object: every counter, the failure reasons, endpoint and model."""
        with self._lock:
            out: dict[str, Any] = {name: int(self.counts[name]) for name in COUNTERS}
            out["failure_reasons"] = dict(sorted(self.failure_reasons.items()))
            busy = self.counts["busy_ms"]
            out["effective_concurrency"] = round(self.counts["inflight_ms"] / busy, 2) if busy else 0.0
        out["concurrency_limit"] = self.concurrency_limit
        out["concurrency_cap"] = self.concurrency_cap
        out["endpoint"] = self.endpoint
        out["model"] = self.model
        return out
