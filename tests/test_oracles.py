"""Oracle filters: offline stand-ins on real seed blueprints, the LLM path over real HTTP."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.blueprints.schema import Blueprint, to_json
from pipeline.blueprints.slots import render
from pipeline.llm import LLMClient, LLMConfig, RequestCache, RetryPolicy
from pipeline.stage import StageContext
from stages.oracles import OracleNecessity, OracleSufficiency
from stages.oracles.prompts import JUDGE_PROMPT
from tests.servers.llama import LlamaServer, llama_server  # noqa: F401 - the fixture
from tests.servers.scripted import Reply, ScriptedServer

BLUEPRINTS = Path(__file__).resolve().parents[1] / "blueprints"
TAXI = BLUEPRINTS / "state_tracking" / "st-taxi-instrument.yaml"  # resolution negative
TRAIN = BLUEPRINTS / "temporal_grounding" / "tg-abs-train-departure.yaml"  # no negative


def scaled_item(path: Path) -> dict[str, Any]:
    """A seed file rendered with its own slot values, shaped like a ``split`` item."""
    seed = Blueprint.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    rendered = render(seed, new_id=f"{seed.id}--s00")
    return {"id": rendered.id, "seed_id": seed.id, "split": "test", "blueprint": to_json(rendered),
            "provenance": {"generator": "offline-rules"}}  # fmt: skip


def context(stage: str, llm: LLMClient | None = None) -> StageContext:
    return StageContext(seed=0, stage=stage, environment={"llm": "test"}, services={"llm": llm} if llm else {})


def run_both(items: list[dict[str, Any]], llm: LLMClient | None = None, **necessity: Any) -> tuple[Any, Any]:
    sufficiency = OracleSufficiency().run({"split": items}, context("oracle_sufficiency", llm))
    kept = sufficiency.items
    return sufficiency, OracleNecessity(necessity).run({"oracle_sufficiency": kept}, context("oracle_necessity", llm))


# ---------------------------------------------------------------- offline stand-ins


def test_offline_oracles_keep_sound_seed_blueprints_and_say_they_are_rules() -> None:
    items = [scaled_item(TAXI), scaled_item(TRAIN)]
    sufficiency, necessity = run_both(items)
    assert [i["id"] for i in necessity.items] == ["st-taxi-instrument--s00", "tg-abs-train-departure--s00"]
    for item in necessity.items:
        for oracle in ("sufficiency", "necessity"):
            record = item["oracles"][oracle]
            assert record["method"] == "offline-rules" and "stand-in" in record["note"]
            assert record["passed"] is True and all(check["ok"] for check in record["checks"])
            assert item["provenance"][f"oracle_{oracle}"] == "offline-rules"
    assert necessity.stats["method"] == "offline-rules" and "llm" not in necessity.stats


def test_offline_sufficiency_flags_what_a_solver_could_not_know() -> None:
    taxi = scaled_item(TAXI)
    unstated = copy.deepcopy(taxi)
    unstated["id"] = "unstated-slot"
    unstated["blueprint"]["gold_slots"] = ["cello", "glovebox"]  # the constraint never mentions a glovebox
    no_negative = copy.deepcopy(taxi)
    no_negative["id"] = "no-negative"
    del no_negative["blueprint"]["negative"]  # state tracking needs its Neg-Clean
    out = OracleSufficiency().run({"split": [taxi, unstated, no_negative]}, context("oracle_sufficiency"))
    assert [i["id"] for i in out.items] == [taxi["id"]]
    dropped = {d.item_id: d for d in out.dropped}
    assert dropped["unstated-slot"].reason == "sufficiency_flagged"
    assert "gold_slots_in_constraint: not stated in the constraint: glovebox" in dropped["unstated-slot"].detail
    assert "state_tracking needs a Neg-Clean negative" in dropped["no-negative"].detail
    assert (out.stats["passed"], out.stats["flagged_pending"]) == (1, 2)


def test_offline_necessity_drops_triggers_that_leak_the_constraint() -> None:
    taxi = scaled_item(TAXI)
    slot_leak = copy.deepcopy(taxi)
    slot_leak["id"] = "slot-leak"
    slot_leak["blueprint"]["trigger"]["text"] = "We just pulled up outside the hotel, the cello is still with us."
    word_leak = copy.deepcopy(taxi)
    word_leak["id"] = "word-leak"
    word_leak["blueprint"]["trigger"]["text"] = "We just pulled up outside the hotel, the driver is waiting."
    out = OracleNecessity().run({"oracle_sufficiency": [taxi, slot_leak, word_leak]}, context("oracle_necessity"))
    assert [i["id"] for i in out.items] == [taxi["id"]]
    dropped = {d.item_id: (d.reason, d.detail) for d in out.dropped}
    assert dropped["slot-leak"] == (
        "necessity_leak", "no_gold_slot_in_trigger: trigger mentions cello; no_shared_content_word: shared: cello")
    assert dropped["word-leak"] == ("necessity_leak", "no_shared_content_word: shared: driver")
    logical = copy.deepcopy(word_leak)
    logical["blueprint"]["dimension"] = "logical_adherence"  # its triggers echo the rule by design
    assert OracleNecessity().run({"oracle_sufficiency": [logical]}, context("oracle_necessity")).items


# ---------------------------------------------------------------- LLM path, scripted server


def _reply_in(judge_request: str) -> str:
    match = re.search(r"Assistant reply:\n(.*)\n\nDoes the reply", judge_request, flags=re.S)
    assert match is not None
    return match.group(1)


def scripted_model(body: dict[str, Any], index: int) -> Reply:
    """A tiny deterministic 'model': an attentive assistant and a keyword judge."""
    messages = body["messages"]
    if messages[0]["content"] == JUDGE_PROMPT:
        said = _reply_in(messages[-1]["content"]).lower()
        verdict = "YES" if ("forget" in said or "heads-up" in said) else "NO"
        return Reply.ok(json.dumps({"verdict": verdict, "reason": f"keyword judge: {verdict}"}))
    users = " ".join(m["content"] for m in messages if m["role"] == "user").lower()
    if "curb" in users:  # the resolving turn: nothing left to remind
        return Reply.ok("Enjoy the hotel!")
    if "trunk" in users:
        return Reply.ok("Don't forget the cello in the trunk before the taxi leaves!")
    if "17:42" in users:
        return Reply.ok("Heads-up: your train leaves at 17:42, a seven-course meal will not fit.")
    if "mystery" in users:  # a trigger that gives the game away on its own
        return Reply.ok("Don't forget whatever you left behind!")
    return Reply.ok("Sounds lovely, enjoy!")


def scripted_client(server: ScriptedServer, cache: Path) -> LLMClient:
    config = LLMConfig(base_url=server.base_url, model="scripted-model", retry=RetryPolicy(base_delay=0.01, max_retries=1))
    return LLMClient(config, RequestCache(cache))


def test_llm_oracles_answer_judge_and_record_per_blueprint(tmp_path: Path) -> None:
    items = [scaled_item(TAXI), scaled_item(TRAIN)]
    with ScriptedServer(handler=scripted_model) as server:
        llm = scripted_client(server, tmp_path / "llm.sqlite")
        sufficiency, necessity = run_both(items, llm)
        sent = server.chat_requests()
    taxi, train = necessity.items
    checks = taxi["oracles"]["sufficiency"]["checks"]
    assert [(c["variant"], c["expected"], c["verdict"], c["ok"]) for c in checks] == [
        ("pos_clean", "intervene", "YES", True), ("neg_clean", "silent", "NO", True)]  # fmt: skip
    assert checks[0]["response"].startswith("Don't forget the cello")
    assert [c["variant"] for c in train["oracles"]["sufficiency"]["checks"]] == ["pos_clean"]
    assert taxi["oracles"]["sufficiency"]["method"] == "llm:scripted-model"
    rollouts = taxi["oracles"]["necessity"]["checks"]
    assert [r["rollout"] for r in rollouts] == [0, 1, 2, 3, 4] and {r["verdict"] for r in rollouts} == {"NO"}
    # sufficiency: 3 answers (taxi pos+neg, train pos) + 3 judgements
    assert sufficiency.stats["llm"]["requests"] == 6
    # necessity: 2 x 5 rollouts; the 5 identical replies per blueprint need one judgement each
    assert (necessity.stats["llm"]["requests"], necessity.stats["llm"]["cache_hits"]) == (12, 8)
    probes = [r.body for r in sent if r.body["messages"][0]["content"] != JUDGE_PROMPT and len(r.body["messages"]) == 2]
    assert len(probes) == 10 and {p["temperature"] for p in probes} == {0.8}
    assert len({(p["messages"][1]["content"], p["seed"]) for p in probes}) == 10  # distinct seeds per rollout
    neg = next(r.body for r in sent if "curb" in json.dumps(r.body) and r.body["messages"][0]["content"] != JUDGE_PROMPT)
    assert [m["role"] for m in neg["messages"]] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert neg["messages"][-1]["content"].startswith("[2026-05-09T18:52] ")

    with ScriptedServer(handler=scripted_model) as again:  # a rerun sends nothing
        rerun_suff, rerun_nec = run_both(items, scripted_client(again, tmp_path / "llm.sqlite"))
        assert again.chat_requests() == []
    assert rerun_nec.items == necessity.items and rerun_suff.stats["llm"]["cache_hits"] == 6


def test_llm_oracles_drop_failures_guesses_and_unreachable_items(tmp_path: Path) -> None:
    taxi, train = scaled_item(TAXI), scaled_item(TRAIN)
    silent = copy.deepcopy(train)
    silent["id"] = "silent-train"
    silent["blueprint"]["constraints"][0]["text"] = "We are booked on a train this evening."  # no 17:42: no reminder
    leaky = copy.deepcopy(taxi)
    leaky["id"] = "leaky"
    leaky["blueprint"]["trigger"]["text"] += " Mystery solved."
    with ScriptedServer(handler=scripted_model) as server:
        llm = scripted_client(server, tmp_path / "llm.sqlite")
        sufficiency, necessity = run_both([taxi, silent, leaky], llm)
    assert {d.item_id: d.reason for d in sufficiency.dropped} == {"silent-train": "sufficiency_flagged"}
    assert "pos_clean: expected intervene, judge said NO" in sufficiency.dropped[0].detail
    assert {d.item_id: d.reason for d in necessity.dropped} == {"leaky": "necessity_guessed"}
    assert necessity.dropped[0].detail == "5 of 5 trigger-only rollouts delivered the intent"
    assert [i["id"] for i in necessity.items] == [taxi["id"]]

    def broken_for_taxi(body: dict[str, Any], index: int) -> Reply:
        return Reply.error(500, "boom") if "trunk" in json.dumps(body) else scripted_model(body, index)

    with ScriptedServer(handler=broken_for_taxi) as flaky:
        out = OracleSufficiency().run({"split": [taxi, train]},
                                      context("oracle_sufficiency", scripted_client(flaky, tmp_path / "other.sqlite")))
    assert [i["id"] for i in out.items] == [train["id"]]
    assert [(d.item_id, d.reason) for d in out.dropped] == [(taxi["id"], "llm_server_error")]
    assert out.stats["llm"]["failures"] == 2  # pos and neg answers of the taxi both failed


# ---------------------------------------------------------------- real protocol


@pytest.mark.llm
def test_oracles_against_llama_cpp_account_for_every_blueprint(llama_server: LlamaServer, tmp_path: Path) -> None:  # noqa: F811
    config = LLMConfig(base_url=llama_server.base_url, model=llama_server.model, timeout=120, concurrency=2)
    llm = LLMClient(config, RequestCache(tmp_path / "llm.sqlite"))
    items = [scaled_item(TRAIN)]  # one skeleton: 2 CPU cores, keep it short
    small = {"answer_max_tokens": 32, "judge_max_tokens": 48}
    sufficiency = OracleSufficiency({**small, "keep_pending": True}).run({"split": items}, context("s", llm))
    necessity = OracleNecessity({**small, "rollouts": 2}).run({"oracle_sufficiency": sufficiency.items}, context("n", llm))
    for out, n_in in ((sufficiency, 1), (necessity, len(sufficiency.items))):
        assert len(out.items) + len(out.dropped) == n_in and all(d.reason for d in out.dropped)
    for item in sufficiency.items:
        record = item["oracles"]["sufficiency"]
        assert record["method"] == f"llm:{llama_server.model}"
        assert record["status"] in ("pass", "flagged_pending_review")
        assert all(c["verdict"] in ("YES", "NO") for c in record["checks"])
    assert sufficiency.stats["llm"]["completion_tokens"] > 0
