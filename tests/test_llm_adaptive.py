"""Adaptive concurrency (AIMD): a one-slot server is not flooded into timeouts (issue 18, item 8).

The scripted server plays a one-slot local server: it works on one request at a time (a
lock), and keeps working on a request whose client already gave up, as llama.cpp does.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from pipeline.llm import ChatRequest, LLMClient, LLMConfig, RetryPolicy
from tests.servers.scripted import Reply, ScriptedServer

SERVICE_S = 0.15
TIMEOUT_S = 0.5


def one_slot() -> Any:
    lock = threading.Lock()

    def handler(body: dict[str, Any], index: int) -> Reply:
        with lock:
            time.sleep(SERVICE_S)
        return Reply.ok("done")
    return handler


def run(server: ScriptedServer, adaptive: bool, n: int = 16) -> tuple[list, dict]:
    config = LLMConfig(base_url=server.base_url, model="m", concurrency=8, timeout=TIMEOUT_S, adaptive=adaptive,
                       retry=RetryPolicy(base_delay=0.05, max_delay=0.2, max_retries=6))
    client = LLMClient(config)
    results = client.map([ChatRequest([{"role": "user", "content": f"q{i}"}]) for i in range(n)])
    return results, client.stats.as_dict()


def test_timeouts_halve_the_in_flight_limit_so_a_one_slot_server_keeps_up() -> None:
    with ScriptedServer(handler=one_slot()) as server:
        results, stats = run(server, adaptive=True)
    assert all(r.ok for r in results)
    assert stats["timeouts"] >= 1 and stats["concurrency_cuts"] >= 1  # the first wave overflows the queue
    assert stats["concurrency_limit"] <= 4 and stats["concurrency_cap"] == 8  # cut from 8, creeping back up
    assert stats["failures"] == 0 and stats["requests"] == 16 + stats["retries"]
    assert 0 < stats["effective_concurrency"] <= 8


@pytest.mark.slow  # about 12 s of a flooded server's timeouts and back-offs
def test_a_fixed_limit_floods_the_same_server_with_more_timeouts_and_requests() -> None:
    with ScriptedServer(handler=one_slot()) as server:
        _, adaptive = run(server, adaptive=True)
    with ScriptedServer(handler=one_slot()) as server:
        _, fixed = run(server, adaptive=False)
    assert fixed["concurrency_cuts"] == 0 and fixed["concurrency_limit"] == 8
    assert fixed["timeouts"] > 2 * adaptive["timeouts"] and fixed["requests"] > adaptive["requests"]
    assert fixed["failures"] > adaptive["failures"] == 0  # the flood makes some requests give up


def test_a_many_slot_server_is_driven_at_the_cap() -> None:
    with ScriptedServer(latency=0.2) as server:
        results, stats = run(server, adaptive=True, n=16)
    assert all(r.ok for r in results) and stats["timeouts"] == 0 and stats["concurrency_cuts"] == 0
    assert server.max_in_flight == 8  # 16 requests, 8 at a time (speed is measured in bench/, not asserted here)
    assert stats["effective_concurrency"] > 6
