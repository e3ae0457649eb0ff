"""Pure parts of the LLM layer: Retry-After parsing, backoff, endpoint scrubbing, JSON extraction, config, cache."""

from __future__ import annotations

import email.utils
import json
import multiprocessing
from pathlib import Path

import pytest
from pydantic import BaseModel

from pipeline.llm import ChatRequest, LLMConfig, RequestCache, RetryPolicy, parse_retry_after, request_key, safe_endpoint
from pipeline.llm.structured import StructuredOutputError, extract_json_object, parse_answer


class Pair(BaseModel):
    name: str
    count: int


def test_retry_after_seconds_milliseconds_and_http_date() -> None:
    assert parse_retry_after({"Retry-After": "7"}) == 7.0
    assert parse_retry_after({"retry-after": "0.25"}) == 0.25
    assert parse_retry_after({"retry-after-ms": "1500", "Retry-After": "9"}) == 1.5
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after({"Retry-After": date}, now=now) == pytest.approx(30.0, abs=1.0)
    assert parse_retry_after({"Retry-After": email.utils.formatdate(now - 60, usegmt=True)}, now=now) == 0.0
    assert parse_retry_after({"Retry-After": "soon"}) is None
    assert parse_retry_after({}) is None


def test_backoff_is_exponential_bounded_and_reproducible() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=5.0)
    waits = [policy.backoff(attempt, "k") for attempt in range(6)]
    ceilings = [1, 2, 4, 5, 5, 5]
    for wait, ceiling in zip(waits, ceilings):
        assert ceiling / 2 <= wait <= ceiling
    assert waits == [policy.backoff(attempt, "k") for attempt in range(6)]
    assert policy.backoff(0, "k") != policy.backoff(0, "other")  # jitter spreads requests apart
    assert policy.wait(3, "k", retry_after=2.0) == 2.0
    assert RetryPolicy(max_retry_after=10).wait(0, "k", retry_after=500) == 10


def test_safe_endpoint_strips_credentials_query_and_fragment() -> None:
    assert safe_endpoint("https://user:s3cret@api.example.com:8443/v1/?key=abc#x") == "https://api.example.com:8443/v1"
    assert safe_endpoint("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert safe_endpoint(None) is None


def test_extract_json_object_from_prose_and_fences() -> None:
    assert extract_json_object('Sure! ```json\n{"a": {"b": [1, 2]}}\n``` done') == {"a": {"b": [1, 2]}}
    assert extract_json_object('{broken {"ok": true}') == {"ok": True}
    with pytest.raises(StructuredOutputError):
        extract_json_object("[1, 2, 3] no object here")
    assert parse_answer('{"name": "x", "count": 2}', Pair) == Pair(name="x", count=2)
    with pytest.raises(StructuredOutputError, match="count"):
        parse_answer('{"name": "x", "count": "many"}', Pair)


def test_config_from_arguments_then_environment() -> None:
    assert LLMConfig.resolve(environ={"OPENAI_API_KEY": "sk-only-a-key"}) is None
    env = {"OPENAI_BASE_URL": "http://h:1/v1", "OPENAI_API_KEY": "sk-env"}
    config = LLMConfig.resolve(model="m", environ=env)
    assert config is not None
    assert (config.base_url, config.model, config.api_key) == ("http://h:1/v1", "m", "sk-env")
    config = LLMConfig.resolve(base_url="http://flag:2/v1", environ=env)
    assert config is not None and config.base_url == "http://flag:2/v1" and config.model is None
    local = LLMConfig.resolve(base_url="http://local/v1", environ={})
    assert local is not None and local.api_key  # dummy key for servers that need none
    assert "sk-env" not in repr(LLMConfig.resolve(model="m", environ=env))
    with pytest.raises(ValueError):
        LLMConfig(base_url="http://h/v1", concurrency=0)


def test_cache_key_covers_what_changes_the_answer() -> None:
    base = ChatRequest([{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=10)
    key = request_key("m", base.key_payload())
    variants = [
        ChatRequest([{"role": "user", "content": "hi!"}], temperature=0.0, max_tokens=10),
        ChatRequest([{"role": "user", "content": "hi"}], temperature=0.5, max_tokens=10),
        ChatRequest([{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=11),
        ChatRequest([{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=10, sample=1),
        ChatRequest([{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=10, seed=3),
        ChatRequest([{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=10, schema=Pair),
    ]
    keys = {request_key("m", v.key_payload()) for v in variants}
    assert key not in keys and len(keys) == len(variants)
    assert request_key("other-model", base.key_payload()) != key
    tagged = ChatRequest([{"role": "user", "content": "hi"}], temperature=0.0, max_tokens=10, tag="item-7")
    assert request_key("m", tagged.key_payload()) == key  # the caller's label is not part of the request


def _write_entries(path: str, start: int) -> None:
    cache = RequestCache(path)
    for index in range(start, start + 50):
        cache.put(f"k{index}", {"text": str(index)})
    cache.close()


def test_request_cache_is_shared_across_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "llm.sqlite")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_write_entries, args=(path, start)) for start in (0, 25, 50)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    cache = RequestCache(path)
    assert len(cache) == 100  # keys 0..99, overlapping writes kept once
    found = cache.get_many([f"k{i}" for i in range(100)] + ["missing"])
    assert set(found) == {f"k{i}" for i in range(100)}
    assert json.dumps(found["k42"]) == '{"text": "42"}'
