"""The real protocol: the LLM client against llama.cpp's OpenAI-compatible server (SmolLM2-135M)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from pipeline.llm import ChatRequest, LLMClient, LLMConfig, RequestCache
from tests.servers.llama import LlamaServer, llama_server  # noqa: F401 - the fixture

pytestmark = pytest.mark.llm


class Verdict(BaseModel):
    verdict: str = Field(description="yes or no")
    reason: str


def test_structured_request_round_trips_through_validation(llama_server: LlamaServer, tmp_path: Path) -> None:  # noqa: F811
    config = LLMConfig(base_url=llama_server.base_url, timeout=120, concurrency=2)
    client = LLMClient(config, RequestCache(tmp_path / "llm.sqlite"))
    assert client.model == llama_server.model  # discovered from /v1/models
    question = [{"role": "user", "content": "Is water wet? Give a verdict and a short reason."}]
    result = client.complete(ChatRequest(question, schema=Verdict, max_tokens=60))
    if result.ok:
        assert result.parsed(Verdict).verdict == result.data["verdict"]  # type: ignore[index]
        assert result.mode in ("json_schema", "json_object_schema")
    else:  # a 135M model may still ramble: then it must fail cleanly, with a reason
        assert result.error == "invalid_output" and result.detail
    stats = client.stats.as_dict()
    assert stats["requests"] >= 1 and stats["prompt_tokens"] > 0 and stats["completion_tokens"] > 0
    assert stats["model"] == llama_server.model and stats["failures"] == (0 if result.ok else 1)


def test_rollouts_are_cached_and_a_rerun_sends_nothing(llama_server: LlamaServer, tmp_path: Path) -> None:  # noqa: F811
    config = LLMConfig(base_url=llama_server.base_url, model=llama_server.model, timeout=120)
    prompt = [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "Name a fruit."}]
    batch = [ChatRequest(prompt, temperature=0.8, max_tokens=12, seed=100 + i, sample=i) for i in range(3)]
    first = LLMClient(config, RequestCache(tmp_path / "llm.sqlite"))
    answers = first.map(batch)
    assert all(r.ok and r.text is not None for r in answers)
    stats = first.stats.as_dict()
    assert stats["requests"] == 3 and stats["completion_tokens"] <= 3 * 12
    rerun = LLMClient(config, RequestCache(tmp_path / "llm.sqlite"))
    assert [r.text for r in rerun.map(batch)] == [r.text for r in answers]
    assert (rerun.stats.as_dict()["requests"], rerun.stats.as_dict()["cache_hits"]) == (0, 3)
