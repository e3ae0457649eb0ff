"""The LLM client against a scripted OpenAI-compatible server over real HTTP: cache, retries, repairs."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from pipeline.llm import ChatRequest, LLMClient, LLMConfig, RequestCache, RetryPolicy
from tests.servers.scripted import Reply, ScriptedServer

FAST = RetryPolicy(max_retries=3, max_rate_limit_retries=3, base_delay=0.02, max_delay=0.1)


class Answer(BaseModel):
    answer: str
    confidence: float


def make_client(server: ScriptedServer, cache: Path | None = None, **limits: Any) -> LLMClient:
    limits = {"timeout": 5.0, "retry": FAST, **limits}
    config = LLMConfig(base_url=server.base_url, model="scripted-model", api_key="sk-test", **limits)
    return LLMClient(config, RequestCache(cache) if cache is not None else None)


def ask(text: str, **options: Any) -> ChatRequest:
    return ChatRequest([{"role": "system", "content": "Be brief."}, {"role": "user", "content": text}], **options)


@pytest.fixture()
def server() -> Any:
    with ScriptedServer() as running:
        yield running


def test_answers_keep_order_and_tokens_are_counted(server: ScriptedServer) -> None:
    client = make_client(server)
    texts = ["one", "two words", "three little words", "four", "five five"]
    results = client.map([ask(t, tag=f"item-{i}") for i, t in enumerate(texts)])
    assert [r.text for r in results] == [f"echo: {t}" for t in texts]
    assert [r.tag for r in results] == [f"item-{i}" for i in range(5)]
    stats = client.stats.as_dict()
    # the scripted server counts words: "Be brief." is 2 words, the answer is "echo:" + the text
    assert stats["prompt_tokens"] == sum(2 + len(t.split()) for t in texts)
    assert stats["completion_tokens"] == sum(1 + len(t.split()) for t in texts)
    assert (stats["requests"], stats["retries"], stats["failures"], stats["cache_hits"]) == (5, 0, 0, 0)
    sent = server.chat_requests()
    assert {r.body["messages"][1]["content"] for r in sent} == set(texts)
    assert all(r.body["model"] == "scripted-model" and r.body["temperature"] == 0.0 for r in sent)


def test_second_run_sends_no_request(server: ScriptedServer, tmp_path: Path) -> None:
    batch = [ask(f"question {i}", temperature=0.7, sample=i % 2) for i in range(12)]
    first = make_client(server, tmp_path / "llm.sqlite").map(batch)
    assert len(server.chat_requests()) == 12
    again = make_client(server, tmp_path / "llm.sqlite")
    second = again.map(batch)
    assert len(server.chat_requests()) == 12  # nothing new reached the server
    assert again.stats.as_dict()["requests"] == 0 and again.stats.as_dict()["cache_hits"] == 12
    assert [r.text for r in second] == [r.text for r in first] and all(r.cached for r in second)


def test_cache_survives_a_move_to_another_host(server: ScriptedServer, tmp_path: Path) -> None:
    make_client(server, tmp_path / "c.sqlite").map([ask("portable")])
    with ScriptedServer() as elsewhere:
        moved = make_client(elsewhere, tmp_path / "c.sqlite")
        assert moved.map([ask("portable")])[0].text == "echo: portable"
        assert elsewhere.chat_requests() == []
        moved.map([ask("portable", temperature=0.3), ask("portable", sample=1)])
        assert len(elsewhere.chat_requests()) == 2  # other sampling, other sample: new requests


def test_identical_requests_in_a_batch_are_sent_once(server: ScriptedServer) -> None:
    client = make_client(server)
    results = client.map([ask("same"), ask("same", tag="b"), ask("other"), ask("same", tag="c")])
    assert len(server.chat_requests()) == 2
    assert [r.text for r in results] == ["echo: same", "echo: same", "echo: other", "echo: same"]
    assert [r.tag for r in results] == ["", "b", "", "c"]
    assert client.stats.as_dict()["cache_hits"] == 2


def test_concurrency_is_capped(tmp_path: Path) -> None:
    with ScriptedServer(latency=0.2) as slow:
        client = make_client(slow, concurrency=2)
        started = time.monotonic()
        client.map([ask(f"q{i}") for i in range(8)])
        elapsed = time.monotonic() - started
        assert slow.max_in_flight == 2
        assert elapsed >= 4 * 0.2 * 0.95  # 8 requests, 2 at a time, 0.2 s each
        wide = make_client(slow, concurrency=8)
        wide.map([ask(f"r{i}") for i in range(8)])
        assert slow.max_in_flight == 8  # the cap, not the machine, set the first bound (no wall-time bound: load varies)


def test_retry_after_seconds_is_honoured(server: ScriptedServer) -> None:
    server.enqueue(Reply.rate_limit("1"))
    client = make_client(server)
    result = client.complete(ask("wait for me"))
    assert result.ok and result.text == "echo: wait for me" and result.attempts == 2
    first, second = server.chat_requests()
    assert second.received_at - first.received_at >= 0.95
    stats = client.stats.as_dict()
    assert (stats["rate_limited"], stats["transient_errors"], stats["retries"], stats["requests"]) == (1, 0, 1, 2)


def test_retry_after_http_date_is_honoured(server: ScriptedServer) -> None:
    server.enqueue(Reply.rate_limit(email.utils.formatdate(time.time() + 2, usegmt=True)))
    result = make_client(server).complete(ask("dated"))
    first, second = server.chat_requests()
    assert result.ok
    assert second.received_at - first.received_at >= 0.9  # the date has 1 s resolution: 1-2 s


def test_rate_limits_and_transient_errors_are_counted_apart(server: ScriptedServer) -> None:
    server.enqueue(Reply.error(500), Reply.rate_limit("0"), Reply.error(503), Reply.malformed())
    client = make_client(server)
    result = client.complete(ask("bumpy"))
    assert result.ok and result.attempts == 5
    stats = client.stats.as_dict()
    assert stats["rate_limited"] == 1
    assert stats["transient_errors"] == 3  # 500, 503 and the unreadable body
    assert (stats["retries"], stats["requests"], stats["failures"]) == (4, 5, 0)


def test_a_hang_times_out_and_is_retried(server: ScriptedServer) -> None:
    server.enqueue(Reply.hang(10))
    client = make_client(server, timeout=0.5)
    started = time.monotonic()
    result = client.complete(ask("are you there"))
    elapsed = time.monotonic() - started
    assert result.ok and result.attempts == 2
    assert 0.5 <= elapsed < 5
    assert client.stats.as_dict()["transient_errors"] == 1


def test_invalid_structured_output_is_repaired(server: ScriptedServer) -> None:
    server.enqueue(Reply.ok("I think yes."), Reply.ok('{"answer": "yes", "confidence": "high"}'))
    server.enqueue(Reply.ok('Here: {"answer": "yes", "confidence": 0.75}'))
    client = make_client(server)
    result = client.complete(ask("Is it?", schema=Answer))
    assert result.ok and result.parsed(Answer) == Answer(answer="yes", confidence=0.75)
    assert client.stats.as_dict()["repairs"] == 2
    requests = server.chat_requests()
    assert requests[0].body["response_format"]["type"] == "json_schema"
    assert requests[0].body["response_format"]["json_schema"]["schema"]["required"] == ["answer", "confidence"]
    last = requests[2].body["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert last[4]["content"] == '{"answer": "yes", "confidence": "high"}'
    assert "confidence" in last[5]["content"] and "number" in last[5]["content"]


def test_repairs_are_bounded_and_failures_are_not_cached(server: ScriptedServer, tmp_path: Path) -> None:
    server.enqueue(Reply.ok("nope"), Reply.ok("still nope"))
    client = make_client(server, tmp_path / "c.sqlite", max_repairs=1)
    result = client.complete(ask("structured please", schema=Answer, tag="bp-1"))
    assert not result.ok and result.error == "invalid_output" and "no JSON object" in result.detail
    assert result.as_drop().reason == "llm_invalid_output"
    assert client.stats.as_dict()["failure_reasons"] == {"invalid_output": 1}
    server.enqueue(Reply.ok('{"answer": "ok", "confidence": 1}'))
    retry = make_client(server, tmp_path / "c.sqlite", max_repairs=1).complete(ask("structured please", schema=Answer))
    assert retry.ok and not retry.cached and len(server.chat_requests()) == 3


def test_an_item_whose_calls_all_fail_is_reported_with_its_reason(tmp_path: Path) -> None:
    with ScriptedServer(handler=lambda body, index: Reply.error(502, "upstream down")) as broken:
        client = make_client(broken, tmp_path / "c.sqlite", retry=RetryPolicy(max_retries=2, base_delay=0.01))
        results = client.map([ask("a", tag="x"), ask("b", tag="y")])
        assert [(r.ok, r.error, r.tag) for r in results] == [(False, "server_error", "x"), (False, "server_error", "y")]
        assert all("upstream down" in r.detail and "gave up after 3" in r.detail for r in results)
        stats = client.stats.as_dict()
        assert (stats["requests"], stats["retries"], stats["failures"]) == (6, 4, 2)
        assert len(client.cache or []) == 0
    with ScriptedServer(handler=lambda body, index: Reply.error(401, "bad key")) as refusing:
        result = make_client(refusing).complete(ask("c"))
        assert (result.ok, result.error, result.attempts) == (False, "http_401", 1)  # not worth retrying


def _format_picky(body: dict[str, Any], index: int) -> Reply:
    if body.get("response_format", {}).get("type") == "json_schema":
        return Reply.error(400, "response_format json_schema is not supported here")
    return Reply.ok('{"answer": "fine", "confidence": 0.5}')


def test_an_endpoint_without_json_schema_gets_the_next_format() -> None:
    with ScriptedServer(handler=_format_picky) as picky:
        client = make_client(picky)
        assert client.complete(ask("first", schema=Answer)).mode == "json_object_schema"
        client.map([ask("second", schema=Answer), ask("third", schema=Answer)])
        formats = [r.body["response_format"]["type"] for r in picky.chat_requests()]
        assert formats == ["json_schema", "json_object", "json_object", "json_object"]
        assert picky.chat_requests()[1].body["response_format"]["schema"]["required"] == ["answer", "confidence"]
        assert client.stats.as_dict()["failures"] == 0


def test_the_key_never_reaches_stats_logs_or_reprs(server: ScriptedServer, caplog: pytest.LogCaptureFixture) -> None:
    secret = "sk-test-DO-NOT-LEAK-93f1c2"
    config = LLMConfig(base_url=server.base_url, model="scripted-model", api_key=secret, retry=FAST)
    client = LLMClient(config)
    server.enqueue(Reply.error(500), Reply.ok("not json"), Reply.ok('{"answer": "a", "confidence": 1}'))
    with caplog.at_level(logging.DEBUG):
        results = client.map([ask("hello", schema=Answer)]) + client.map([ask("plain")])
    assert server.chat_requests()[0].headers["authorization"] == f"Bearer {secret}"  # the key is in use
    shown = [repr(client), repr(config), json.dumps(client.stats.as_dict()), caplog.text, repr(results)]
    shown += [str(client.environment()), repr(client.stats)]
    assert all(secret not in text for text in shown)
    assert results[0].ok and client.stats.as_dict()["repairs"] == 1
    assert client.stats.as_dict()["endpoint"] == server.base_url


def test_model_is_discovered_when_not_given(server: ScriptedServer) -> None:
    client = LLMClient(LLMConfig(base_url=server.base_url))
    assert client.model == "scripted-model"
    assert client.environment() == {"llm_endpoint": server.base_url, "llm_model": "scripted-model"}


def test_the_sync_facade_works_inside_a_running_event_loop(server: ScriptedServer) -> None:
    client = make_client(server)

    async def caller() -> list[str | None]:
        return [r.text for r in client.map([ask("from a loop")])]

    assert asyncio.run(caller()) == ["echo: from a loop"]


def test_per_stage_statistics_are_deltas(server: ScriptedServer) -> None:
    client = make_client(server)
    client.map([ask("stage one")])
    before = client.stats.snapshot()
    server.enqueue(Reply.error(500))
    client.map([ask("stage two a"), ask("stage two b")])
    delta = client.stats.since(before).as_dict()
    assert (delta["requests"], delta["retries"], delta["transient_errors"]) == (3, 1, 1)
    assert delta["endpoint"] == server.base_url and delta["model"] == "scripted-model"
