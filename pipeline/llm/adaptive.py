"""Adaptive concurrency for the LLM client: AIMD between 1 and the configured cap.

The in-flight limit starts at the cap (no ramp-up cost against an endpoint that can take
it). A timeout or a rate limit halves it (multiplicative decrease), once per congestion
event: requests that were already in flight when the limit was cut do not cut it again.
Each answer then raises it by ``1/limit`` (about one per round trip: additive increase),
back towards the cap. So a one-slot local server, after its first timeouts, is no longer
flooded with requests that wait past the timeout in its queue, and retries do not pile up.

``Gate.slot()`` is an async context manager around one HTTP attempt; call
``slot.congested()`` before leaving it when the attempt timed out or was rate-limited.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

from pipeline.llm.stats import LLMStats


@dataclass
class Slot:
    """One attempt holding a place under the limit."""

    started: float
    congestion: bool = False

    def congested(self) -> None:
        """Mark this attempt as a timeout or rate limit (the limit is cut when it leaves)."""
        self.congestion = True


@dataclass
class Gate:
    """The in-flight limit of one batch; ``limit`` carries over between batches via the client (0: the cap)."""

    cap: int
    stats: LLMStats
    limit: float = 0.0
    adaptive: bool = True
    in_flight: int = 0
    last_cut: float = -math.inf
    _busy_since: float | None = None
    _changed: asyncio.Condition = field(default_factory=asyncio.Condition)

    def __post_init__(self) -> None:
        self.limit = min(max(self.limit, 1.0), self.cap) if self.limit else float(self.cap)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[Slot]:
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight < math.floor(self.limit))
            if self.in_flight == 0:
                self._busy_since = time.monotonic()
            self.in_flight += 1
        slot = Slot(started=time.monotonic())
        try:
            yield slot
        finally:
            async with self._changed:
                self._leave(slot)
                self._changed.notify_all()

    def _leave(self, slot: Slot) -> None:
        now = time.monotonic()
        self.in_flight -= 1
        self.stats.add_time("inflight_ms", now - slot.started)
        if self.in_flight == 0 and self._busy_since is not None:
            self.stats.add_time("busy_ms", now - self._busy_since)
            self._busy_since = None
        if self.adaptive and slot.congestion:
            if slot.started > self.last_cut:  # one cut per congestion event
                self.limit = max(1.0, float(math.floor(self.limit / 2)))
                self.last_cut = now
                self.stats.add("concurrency_cuts")
        elif self.adaptive:
            self.limit = min(self.limit + 1.0 / self.limit, float(self.cap))
        self.stats.concurrency_limit = math.floor(self.limit)
