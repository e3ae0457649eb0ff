"""Transient LLM failures never become cached results (issue 18, item 1).

An outage, a 5xx storm or rate limits past the retries say nothing about an item: the
runner keeps such items out of the item cache and the stage output out of the artifact
store, stops the build with one line, and the next build retries exactly those items.
Everything runs over real HTTP against the scripted server.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pipeline.cache import ArtifactStore, ItemCache
from pipeline.llm import ChatRequest, LLMClient, LLMConfig, RequestCache, RetryPolicy
from pipeline.llm.errors import EndpointUnreachable, TransientFailures
from pipeline.runner import run_stages
from pipeline.stage import Drop, Item, MapStage, Stage, StageContext, StageOutput
from stages.generate.prompts import SCALE_SYSTEM
from tests.servers.scripted import Reply, ScriptedServer
from tests.test_llm_generation import build_config, everything_model, two_seed_corpus, use_corpus

REPO = Path(__file__).resolve().parents[1]
WORDS = ("alpha", "bravo", "charlie", "delta")


class Source(Stage):
    """Four items, one per word."""

    name = "source"

    def run(self, inputs: dict[str, list[Item]], ctx: StageContext) -> StageOutput:
        return StageOutput(items=[{"id": word, "word": word} for word in WORDS])


class Ask(MapStage):
    """One LLM request per item; a failed request drops the item (as the real stages do)."""

    name = "ask"
    inputs = ("source",)

    def environment_keys(self) -> tuple[str, ...]:
        return ("llm",)

    def process(self, item: Item, ctx: StageContext) -> list[Item] | Drop:
        result = ctx.services["llm"].complete(ChatRequest([{"role": "user", "content": item["word"]}], tag=item["id"]))
        return [{"id": item["id"], "answer": result.text}] if result.ok else result.as_drop()


def fails_for(*words: str) -> Any:
    def handler(body: dict[str, Any], index: int) -> Reply:
        text = body["messages"][-1]["content"]
        return Reply.error(503, "overloaded") if text in words else Reply.ok(f"answer to {text}")
    return handler


def run(server: ScriptedServer, cache: Path, share: float = 0.0) -> Any:
    config = LLMConfig(base_url=server.base_url, model="m", retry=RetryPolicy(base_delay=0.01, max_retries=1))
    llm = LLMClient(config, RequestCache(cache / "requests.sqlite"))
    items = ItemCache(cache / "items.sqlite")
    try:
        return run_stages([Source(), Ask()], lambda s: StageContext(seed=0, stage=s.name, environment={"llm": "m"},
                                                                     services={"llm": llm}),
                          ArtifactStore(cache), items, max_transient_share=share)
    finally:
        items.close()
        llm.close()


def asked(server: ScriptedServer) -> list[str]:
    return sorted({r.body["messages"][-1]["content"] for r in server.chat_requests()})


def test_items_failing_transiently_are_not_cached_and_the_next_run_retries_exactly_them(tmp_path: Path) -> None:
    with ScriptedServer(handler=fails_for("bravo", "delta")) as flaky:
        with pytest.raises(TransientFailures, match=r"stage ask: 2 of 4 items failed .*server_error: 2"):
            run(flaky, tmp_path)
    with ScriptedServer() as healthy:
        result = run(healthy, tmp_path)
    assert asked(healthy) == ["bravo", "delta"]  # alpha and charlie came from the item cache
    assert [i["id"] for i in result.outputs["ask"].items] == list(WORDS) and not result.outputs["ask"].dropped
    with ScriptedServer() as again:  # now complete, the stage artifact is stored
        rerun = run(again, tmp_path)
    assert again.chat_requests() == [] and rerun.records[1].cached


def test_under_the_allowed_share_the_build_goes_on_but_caches_nothing_of_the_outage(tmp_path: Path) -> None:
    with ScriptedServer(handler=fails_for("delta")) as flaky:
        partial = run(flaky, tmp_path, share=0.5)
    record = partial.records[1]
    assert record.dropped == {"llm_server_error": 1} and record.extra["incomplete"] == 1
    assert not ArtifactStore(tmp_path).has("ask", record.fingerprint)  # the one-off output is not stored
    with ScriptedServer() as healthy:
        complete = run(healthy, tmp_path, share=0.5)
    assert asked(healthy) == ["delta"] and complete.records[1].dropped == {}
    assert complete.records[1].fingerprint != record.fingerprint  # downstream never reuses the partial one


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_an_endpoint_that_accepts_no_connection_raises_naming_the_url(tmp_path: Path) -> None:
    port = free_port()
    config = LLMConfig(base_url=f"http://127.0.0.1:{port}/v1", model="m", retry=RetryPolicy(base_delay=0.01, max_retries=1))
    llm = LLMClient(config)
    with pytest.raises(EndpointUnreachable, match=rf"http://127.0.0.1:{port}/v1"):
        llm.check_reachable()
    with pytest.raises(EndpointUnreachable, match="gave up after 2 connection_error"):  # mid-build outage
        llm.complete(ChatRequest([{"role": "user", "content": "hello"}]))


def cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "TRIGGERBENCH_PROGRESS": "0"}
    return subprocess.run([sys.executable, "-m", "pipeline", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=1800)


def small_build(tmp_path: Path) -> list[str]:
    config = build_config(tmp_path, scale={"max_per_seed": 2}, oracle_sufficiency={"keep_pending": True},
                          oracle_necessity={"rollouts": 1})
    use_corpus(config, two_seed_corpus(tmp_path / "blueprints"))
    return ["build", "--limit", "2", "--config", str(config), "--cache-dir", str(tmp_path / "cache"), "--llm-model", "m"]


def scale_requests(server: ScriptedServer) -> list[str]:
    """Which seeds the scale requests were about (taxi, train); repair rounds repeat a seed."""
    bodies = [json.dumps(r.body) for r in server.chat_requests() if r.body["messages"][0]["content"] == SCALE_SYSTEM]
    return sorted({"taxi" if "taxi" in body else "train" for body in bodies})


@pytest.mark.slow
def test_a_build_against_a_closed_port_stops_with_one_line_then_completes_once_a_server_listens(tmp_path: Path) -> None:
    args, port = small_build(tmp_path), free_port()
    url = f"http://127.0.0.1:{port}/v1"
    down = cli(*args, "--out", str(tmp_path / "out"), "--llm-base-url", url)
    assert down.returncode == 1
    assert down.stderr.strip().splitlines() == [down.stderr.strip()] and "Traceback" not in down.stderr
    assert down.stderr.startswith(f"triggerbench build: cannot reach the LLM endpoint {url}: ")
    with ScriptedServer(handler=everything_model, bind_port=port) as server:
        up = cli(*args, "--out", str(tmp_path / "out"), "--llm-base-url", url)
    assert up.returncode == 0, up.stderr[-3000:]
    assert scale_requests(server) == ["taxi", "train"]  # every seed was asked, nothing came from a cache
    (release,) = [p for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")]
    stages = {s["name"]: s for s in json.loads((release / "manifest.json").read_text())["stages"]}
    assert not any(reason.startswith("llm_") and reason not in ("llm_lint", "llm_schema")
                   for s in stages.values() for reason in s["dropped"])


@pytest.mark.slow
def test_a_5xx_storm_on_one_seed_stops_the_build_and_the_rerun_asks_exactly_that_seed(tmp_path: Path) -> None:
    args = small_build(tmp_path)

    def storm(body: dict[str, Any], index: int) -> Reply:
        if body["messages"][0]["content"] == SCALE_SYSTEM and "taxi" in json.dumps(body):
            return Reply.error(502, "bad gateway")
        return everything_model(body, index)

    with ScriptedServer(handler=storm) as flaky:
        failed = cli(*args, "--out", str(tmp_path / "out"), "--llm-base-url", flaky.base_url)
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    assert failed.stderr.strip().splitlines()[-1].startswith(
        "triggerbench build: stage scale: 1 of 2 items failed with transient LLM errors (server_error: 1)")
    assert list((tmp_path / "out").glob("*")) == []
    with ScriptedServer(handler=everything_model) as healthy:
        done = cli(*args, "--out", str(tmp_path / "out"), "--llm-base-url", healthy.base_url)
    assert done.returncode == 0, done.stderr[-3000:]
    assert scale_requests(healthy) == ["taxi"]  # the train seed's answer was definitive and cached
    (release,) = [p for p in (tmp_path / "out").iterdir() if not p.name.startswith(".")]
    stages = {s["name"]: s for s in json.loads((release / "manifest.json").read_text())["stages"]}
    assert stages["scale"]["dropped"] == {"llm_lint": 1} and stages["scale"]["items_out"] == 3
