"""Failures of the LLM layer that end a build instead of becoming item results.

A request that fails with a *transient* reason (the endpoint was down, slow, overloaded
or rate-limiting past the retry budget) says nothing about the item: caching it as a
result would turn an outage into a permanent empty dataset. The client still returns
such failures as :class:`~pipeline.llm.request.LLMResult` (``transient`` is True); the
runner (:mod:`pipeline.runner`) keeps them out of every cache and stops the build when
too many items are affected. :class:`EndpointUnreachable` is raised outright: nothing
can be learnt from an endpoint that accepts no connection.
"""

from __future__ import annotations

TRANSIENT_ERRORS = frozenset({"rate_limited", "timeout", "connection_error", "server_error", "bad_response"})


class EndpointUnreachable(Exception):
    """The LLM endpoint accepts no connection (message names the URL)."""

    def __init__(self, endpoint: str | None, detail: str) -> None:
        super().__init__(f"cannot reach the LLM endpoint {endpoint}: {detail}")
        self.endpoint = endpoint
        self.detail = detail


class TransientFailures(Exception):
    """Too many items of a stage failed for transient LLM reasons; nothing was cached for them."""

    def __init__(self, stage: str, failed: int, total: int, reasons: dict[str, int], endpoint: str | None,
                 allowed: float) -> None:
        counts = ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items())) or "unknown"
        super().__init__(
            f"stage {stage}: {failed} of {total} items failed with transient LLM errors ({counts}) at {endpoint} "
            f"(more than the allowed share {allowed:g}); nothing was cached for them, rerun to retry exactly those")
        self.stage = stage
        self.failed = failed
        self.total = total
