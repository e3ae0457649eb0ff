"""LLM generation paths over real HTTP: scaling, filler exchanges, RM probes, and a CLI build.

A scripted OpenAI-compatible server plays the model with exact, hand-written answers (and
faults); the real llama.cpp server (SmolLM2-135M) runs one small end-to-end build.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml

from pipeline.blueprints.schema import Blueprint, to_json
from pipeline.blueprints.slots import render
from pipeline.llm import LLMClient, LLMConfig, RequestCache, RetryPolicy
from pipeline.stage import StageContext
from stages.dialogues import Dialogues
from stages.generate.prompts import FILLER_SYSTEM, RM_SYSTEM, SCALE_SYSTEM
from stages.load_blueprints import LoadFillers
from stages.oracles.prompts import ASSISTANT_PROMPT, JUDGE_PROMPT
from stages.scale import Scale
from stages.variants import Variants
from tests.conftest import pool_path, run_cli
from tests.servers.llama import LlamaServer, llama_server  # noqa: F401 - the fixture
from tests.servers.scripted import Reply, ScriptedServer

REPO = Path(__file__).resolve().parents[1]
BLUEPRINTS = REPO / "blueprints"
TAXI = BLUEPRINTS / "state_tracking" / "st-taxi-instrument.yaml"
TRAIN = BLUEPRINTS / "temporal_grounding" / "tg-abs-train-departure.yaml"
DRAFTS = json.loads((Path(__file__).parent / "fixtures" / "llm_generation" / "drafts.json").read_text(encoding="utf-8"))


def seed(path: Path) -> Blueprint:
    return Blueprint.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))


def client(server: ScriptedServer, cache: Path) -> LLMClient:
    config = LLMConfig(base_url=server.base_url, model="scripted-model", retry=RetryPolicy(base_delay=0.01, max_retries=1))
    return LLMClient(config, RequestCache(cache))


def context(stage: str, llm: LLMClient | None) -> StageContext:
    env = {"llm": "test", "blueprints_dir": str(BLUEPRINTS)}
    return StageContext(seed=0, stage=stage, environment=env, services={"llm": llm} if llm else {})


def users(body: dict[str, Any]) -> list[str]:
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def number(body: dict[str, Any], noun: str) -> int:
    found = re.search(rf"{noun} number (\d+)", users(body)[0])
    assert found is not None
    return int(found.group(1))


# ---------------------------------------------------------------- scaling


def lint_failing() -> dict[str, Any]:
    draft = copy.deepcopy(DRAFTS["violin"])
    draft["trigger"]["text"] = "Grabbing my violin and coat, we are pulling into the station."  # names a gold slot
    return draft


def near_copy() -> dict[str, Any]:
    draft = copy.deepcopy(DRAFTS["violin"])
    draft["constraints"][0]["text"] = draft["constraints"][0]["text"].replace("The porter", "A porter")
    return draft


def scale_model(body: dict[str, Any], index: int) -> Reply:
    """Scenario 1 valid; 2 invalid JSON, then schema-invalid, then valid; 3 always lint-failing; 4 a near copy of 1."""
    assert body["messages"][0]["content"] == SCALE_SYSTEM
    which, rounds = number(body, "scenario"), len(users(body))
    if which == 1:
        return Reply.ok(json.dumps(DRAFTS["violin"]))
    if which == 2:
        no_trigger = {k: v for k, v in DRAFTS["passport"].items() if k != "trigger"}
        answers = ['Here it is: {"constraints": [', json.dumps(no_trigger), json.dumps(DRAFTS["passport"])]
        return Reply.ok(answers[rounds - 1])
    if which == 3:
        return Reply.ok(json.dumps(lint_failing()))
    return Reply.ok(json.dumps(near_copy()))


def test_llm_scaling_keeps_valid_blueprints_and_drops_the_rest_with_reasons(tmp_path: Path) -> None:
    taxi = seed(TAXI)
    item = {"id": taxi.id, "blueprint": to_json(taxi), "source": "state_tracking/st-taxi-instrument.yaml"}
    with ScriptedServer(handler=scale_model) as server:
        llm = client(server, tmp_path / "llm.sqlite")
        out = Scale({"max_per_seed": 5}).run({"load_blueprints": [item]}, context("scale", llm))
        sent = [r.body for r in server.chat_requests()]
    ids = [f"{taxi.id}--s{n:02d}" for n in range(5)]
    assert [i["id"] for i in out.items] == ids[:3]
    assert {d.item_id: d.reason for d in out.dropped} == {ids[3]: "llm_lint", ids[4]: "near_duplicate_embedding"}
    # 4 first answers + 2 structured repairs (scenario 2) + 1 lint repair (scenario 3)
    assert len(sent) == 7
    lint_repair = next(b for b in sent if "breaks these rules" in users(b)[-1])
    assert "the trigger names gold slot 'violin'" in users(lint_repair)[-1]
    assert f"with {ids[1]}" in next(d.detail for d in out.dropped if d.item_id == ids[4])
    seed_row, violin, passport = out.items
    assert seed_row["blueprint"] == to_json(render(taxi, new_id=ids[0]))  # the seed's own rendering comes first
    assert violin["blueprint"]["trigger"]["text"] == DRAFTS["violin"]["trigger"]["text"]
    assert passport["blueprint"]["gold_slots"] == ["passport", "room safe"]
    for scaled in (violin, passport):
        bp = scaled["blueprint"]
        assert (bp["dimension"], bp["subtype"], bp["topic"], bp["domain"]) == (taxi.dimension, taxi.subtype, taxi.topic, taxi.domain)
        assert scaled["provenance"]["generator"] == "llm:scripted-model" and scaled["provenance"]["prompt_hash"]
        Blueprint.model_validate(bp)
    assert all(b["seed"] is not None and b["temperature"] == 0.9 for b in sent)
    assert len({b["seed"] for b in sent if len(users(b)) == 1}) == 4  # one sampling seed per scenario

    with ScriptedServer(handler=scale_model) as again:  # same build: every answer comes from the request cache
        rerun = Scale({"max_per_seed": 5}).run({"load_blueprints": [item]}, context("scale", client(again, tmp_path / "llm.sqlite")))
        assert again.chat_requests() == []
    assert rerun.items == out.items


# ---------------------------------------------------------------- filler exchanges

CLEAN = [
    {"user": "How do I keep a travel journal going on a short trip?",
     "assistant": "Write three lines every evening: one thing you ate, one thing you saw, one thing you learned."},
    {"user": "Is it worth learning a few words of the local language?",
     "assistant": "Yes: greetings, thanks and numbers go a long way and people warm to the effort."},
    {"user": "What snacks travel well on long flights?",
     "assistant": "Nuts, dried fruit, crackers and hard cheese keep well and are easy to share."},
]


def filler_model() -> Any:
    """Exchange 1 first names the gold slot; 2 leaks twice (slot alternative, trigger word); 3 is first too short."""
    calls: Counter[int] = Counter()

    def handler(body: dict[str, Any], index: int) -> Reply:
        assert body["messages"][0]["content"] == FILLER_SYSTEM
        which = number(body, "exchange")
        calls[which] += 1
        answer = CLEAN[which - 1]
        if which == 1 and calls[which] == 1:
            answer = {"user": "How should I pack a cello for a trip?", "assistant": "Use a hard case."}
        if which == 2:
            leaks = [{"user": "Can I bring a double bass on a bus?", "assistant": "Usually not."},
                     {"user": "Is tipping expected at a hotel?", "assistant": "A little, yes."}]  # fmt: skip
            answer = leaks[calls[which] - 1]
        if which == 3 and calls[which] == 1:
            answer = {"user": "Snacks?", "assistant": "Nuts, mostly."}
        return Reply.ok(json.dumps(answer))

    return handler


def split_item(path: Path) -> dict[str, Any]:
    rendered = render(seed(path), new_id=f"{seed(path).id}--s00")
    return {"id": rendered.id, "seed_id": seed(path).id, "split": "test", "blueprint": to_json(rendered),
            "provenance": {"generator": "offline-rules"}}  # fmt: skip


def corpus(*paths: Path) -> list[dict[str, Any]]:
    """``load_blueprints`` items of the given seed files."""
    return [{"id": seed(p).id, "blueprint": to_json(seed(p)), "source": p.name} for p in paths]


def fillers() -> list[dict[str, Any]]:
    return LoadFillers().run({}, context("load_fillers", None)).items


def test_llm_fillers_reject_leaks_regenerate_and_fall_back_to_the_pool(tmp_path: Path) -> None:
    params = {"filler_exchanges": {"state_tracking": (3, 3)}, "llm": {"attempts": 2}}
    inputs = {"oracle_necessity": [split_item(TAXI)], "load_fillers": fillers(), "load_blueprints": corpus(TAXI)}
    offline = Dialogues(params).run(inputs, context("dialogues", None)).items[0]
    with ScriptedServer(handler=filler_model()) as server:
        out = Dialogues(params).run(inputs, context("dialogues", client(server, tmp_path / "llm.sqlite")))
        sent = server.chat_requests()
    assert len(sent) == 6  # 3 first tries, then all three again
    dialogue = out.items[0]
    record = dialogue["provenance"]["fillers"]
    assert record["rejected"] == {"0": ["attempt 1: mentions 'cello'"],
                                  "1": ["attempt 1: mentions 'double bass'", "attempt 2: shares trigger words hotel"],
                                  "2": ["attempt 1: too short (1-word question, 2-word answer)"]}
    assert (record["generated"], record["from_pool"]) == (2, 1)
    pool_ids = offline["filler_ids"]  # the same seeded draw: the pool exchange stays where the LLM failed
    assert dialogue["filler_ids"][1] == pool_ids[1] and record["fallback"][0]["pool_id"] == pool_ids[1]
    assert all(i.startswith("llm:") for i in (dialogue["filler_ids"][0], dialogue["filler_ids"][2]))
    fill = [t for t in dialogue["turns"] if t["kind"] == "filler" and t["role"] == "user"]
    offline_fill = [t for t in offline["turns"] if t["kind"] == "filler" and t["role"] == "user"]
    assert [t["content"] for t in fill] == [CLEAN[0]["user"], offline_fill[1]["content"], CLEAN[2]["user"]]
    stamps = [t["at"] for t in dialogue["turns"] if t["role"] == "user"]
    assert stamps == sorted(stamps) and stamps[-1] == [t["at"] for t in offline["turns"]][-1]  # same trigger anchor
    topic_line = json.loads(json.dumps(sent[0].body))["messages"][1]["content"]
    assert topic_line.startswith(f"Theme: {seed(TAXI).topic.replace('_', ' ')}.")  # the seed's own story pool


# ---------------------------------------------------------------- RM probes


def rm_model() -> Any:
    """Taxi: the first probe is not recoverable by the oracle, the second is. Train: never recoverable."""
    calls: Counter[str] = Counter()

    def handler(body: dict[str, Any], index: int) -> Reply:
        first = body["messages"][0]["content"]
        text = users(body)[-1]
        if first == RM_SYSTEM:
            kind = "taxi" if "trunk" in text else "train"
            calls[kind] += 1
            if kind == "train":
                return Reply.ok(json.dumps({"question": "When does the user's train leave?", "answer": "At 17:42.",
                                            "aliases": ["17:42", "5:42 PM", "5:42"]}))  # fmt: skip
            question = ["Where did the user put the cello for the ride?", "Where was the cello stowed in the taxi?"]
            return Reply.ok(json.dumps({"question": question[calls[kind] - 1], "answer": "In the taxi's trunk.",
                                        "aliases": ["trunk", "the trunk", "taxi trunk"]}))  # fmt: skip
        assert first == ASSISTANT_PROMPT
        if "put the cello for the ride?" in text:
            return Reply.ok("I think it was on the back seat.")
        if "stowed in the taxi?" in text:
            return Reply.ok("You put it in the Trunk because it did not fit next to the suitcase.")
        return Reply.ok("Sometime this evening.")

    return handler


def test_llm_rm_probes_are_verified_by_an_oracle_or_fall_back(tmp_path: Path) -> None:
    params = {"filler_exchanges": {"state_tracking": (2, 2), "temporal_grounding": (2, 2)}}
    inputs = {"oracle_necessity": [split_item(TAXI), split_item(TRAIN)], "load_fillers": fillers(),
              "load_blueprints": corpus(TAXI, TRAIN)}
    dialogues = Dialogues(params).run(inputs, context("dialogues", None)).items
    offline_rows = Variants().run({"dialogues": dialogues}, context("variants", None)).items
    with ScriptedServer(handler=rm_model()) as server:
        rows = Variants().run({"dialogues": dialogues}, context("variants", client(server, tmp_path / "llm.sqlite"))).items
        sent = server.chat_requests()
    # taxi: 2 probes + 2 oracle answers; train: 2 probes + 1 oracle answer (the second probe is the same
    # question, so its oracle request is identical and answered from the request cache)
    assert len(sent) == 7
    taxi_rm, train_rm = [r for r in rows if r["config"] == "rm_base"]
    assert taxi_rm["question"] == "Where was the cello stowed in the taxi?"
    assert taxi_rm["answer_aliases"] == ["trunk", "the trunk", "taxi trunk"]
    assert taxi_rm["messages"][-1]["content"].endswith(" Where was the cello stowed in the taxi?")
    record = json.loads(taxi_rm["provenance"])["rm_probe"]
    assert record["source"] == "llm:scripted-model" and record["attempts"][1]["matched_alias"] == "trunk"
    assert record["attempts"][0]["rejected"] == "the oracle's answer contains none of the aliases"
    oracle = next(r.body for r in sent if "stowed in the taxi?" in users(r.body)[-1] and r.body["messages"][0]["content"] == ASSISTANT_PROMPT)
    assert [m["role"] for m in oracle["messages"]][:2] == ["system", "user"] and len(oracle["messages"]) == taxi_rm["n_turns"] + 1
    hand = seed(TRAIN)
    assert train_rm["question"] == hand.rm.question.replace("{city}", "Porto")  # the hand-written probe kept
    train_record = json.loads(train_rm["provenance"])["rm_probe"]
    assert train_record["source"] == "hand-written" and "none of the aliases" in train_record["fallback_reason"]
    offline_pm = [r for r in offline_rows if r["config"] != "rm_base"]
    assert [r for r in rows if r["config"] != "rm_base"] == offline_pm  # PM rows do not depend on the RM path


# ---------------------------------------------------------------- CLI builds


def build_config(tmp_path: Path, **stages: Any) -> Path:
    """The default config with smaller LLM settings (absolute blueprint path) and one long context (20K):
    these builds test the LLM stages, which run before the stretch."""
    config = yaml.safe_load((REPO / "configs" / "default.yaml").read_text(encoding="utf-8"))
    config["blueprints"] = str(BLUEPRINTS)
    config["distractors"]["lengths"] = [20000]
    for name, params in stages.items():
        config["stages"][name] = {**(config["stages"].get(name) or {}), **params}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def everything_model(body: dict[str, Any], index: int) -> Reply:
    """Plausible answers to every prompt of an LLM build."""
    first = body["messages"][0]["content"]
    if first == JUDGE_PROMPT:
        return Reply.ok(json.dumps({"verdict": "NO", "reason": "scripted"}))
    if first == SCALE_SYSTEM:
        return Reply.ok(json.dumps(DRAFTS["violin"]))
    if first == FILLER_SYSTEM:
        return Reply.ok(json.dumps(CLEAN[number(body, "exchange") % len(CLEAN)]))
    if first == RM_SYSTEM:
        aliases = ["zebra crossing", "zebra", "crossing"]  # in no constraint turn
        return Reply.ok(json.dumps({"question": "What did they cross?", "answer": "A zebra crossing.", "aliases": aliases}))
    return Reply.ok("Sounds good.")


def check_accounting(manifest: dict[str, Any], per_seed: int) -> dict[str, dict[str, Any]]:
    stages = {s["name"]: s for s in manifest["stages"]}
    scale = stages["scale"]
    assert scale["items_out"] + sum(scale["dropped"].values()) == scale["items_in"] * per_seed
    for name in ("dedupe", "split", "oracle_sufficiency", "oracle_necessity", "dialogues"):
        entry = stages[name]
        assert entry["items_in"] == entry["items_out"] + sum(entry["dropped"].values()), name
    return stages


@pytest.mark.slow
def test_cli_build_against_scripted_server_accounts_for_items_and_reruns_without_requests(tmp_path: Path) -> None:
    config = build_config(tmp_path, scale={"max_per_seed": 2}, oracle_sufficiency={"keep_pending": True},
                          oracle_necessity={"rollouts": 1})  # fmt: skip
    use_corpus(config, two_seed_corpus(tmp_path / "blueprints"))
    args = ["build", "--limit", "2", "--config", str(config), "--cache-dir", str(tmp_path / "cache")]
    with ScriptedServer(handler=everything_model) as server:
        first = run_cli(*args, "--out", str(tmp_path / "one"), "--llm-base-url", server.base_url, "--llm-model", "m")
        assert first.returncode == 0, first.stderr[-3000:]
        sent = len(server.chat_requests())
        second = run_cli(*args, "--out", str(tmp_path / "two"), "--llm-base-url", server.base_url, "--llm-model", "m")
        assert second.returncode == 0, second.stderr[-3000:]
        assert len(server.chat_requests()) == sent  # the rerun sent nothing
    assert sent > 0
    (release,) = [p for p in (tmp_path / "one").iterdir() if p.is_dir() and not p.name.startswith(".")]
    stages = check_accounting(json.loads((release / "manifest.json").read_text()), per_seed=2)
    # the violin draft is a sound state-tracking blueprint (kept for the taxi seed) but not a temporal one
    assert (stages["scale"]["items_out"], stages["scale"]["dropped"]) == (3, {"llm_lint": 1})
    (excluded,) = [json.loads(line) for line in (release / "exclusions" / "scale.jsonl").read_text().splitlines()]
    assert excluded["id"] == "tg-abs-train-departure--s01" and "need 'timing'" in excluded["detail"]
    assert stages["oracle_sufficiency"]["llm"]["requests"] > 0
    rows = pq.read_table(release / "data" / "pm_base").to_pylist()
    assert {r["blueprint_id"] for r in rows} == {"st-taxi-instrument--s00", "st-taxi-instrument--s01", "tg-abs-train-departure--s00"}
    for row in rows:  # every filler exchange was written by the scripted model
        record = json.loads(row["provenance"])["fillers"]
        # a Neg-Clean resolution may take the parity slot of one generated exchange (a blueprint with no update)
        parity = 1 if row["variant"] == "neg_clean" and row["resolution_turn"] is not None else 0
        assert record["from_pool"] == 0 and record["generated"] - len(row["filler_turns"]) // 2 in {0, parity}
    violin = next(r for r in rows if r["blueprint_id"] == "st-taxi-instrument--s01")
    assert violin["messages"][-1]["content"].endswith(DRAFTS["violin"]["trigger"]["text"])
    for row in pq.read_table(release / "data" / "rm_base").to_pylist():  # unrecoverable drafts: hand-written probes
        record = json.loads(row["provenance"])["rm_probe"]
        assert record["source"] == "hand-written" and "no alias occurs" in record["fallback_reason"]


def forward_to(base_url: str) -> Any:
    """A scripted-server handler that relays each chat request to ``base_url`` (a recording proxy)."""

    def handler(body: dict[str, Any], index: int) -> Reply:
        request = urllib.request.Request(f"{base_url}/chat/completions", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=300) as answer:
                data = json.load(answer)
        except urllib.error.HTTPError as error:
            return Reply.error(error.code, error.read().decode("utf-8", "replace")[:2000])
        usage = data.get("usage") or {}
        return Reply.ok(data["choices"][0]["message"]["content"] or "", usage.get("prompt_tokens"),
                        usage.get("completion_tokens"))  # fmt: skip

    return handler


def two_seed_corpus(root: Path) -> Path:
    """The taxi and train seeds with their story or filler pools, copied from the corpus (short prompts for 2 CPU cores)."""
    return seed_corpus(root, (TAXI, TRAIN))


def seed_corpus(root: Path, seeds: Iterable[Path]) -> Path:
    """The given seed files with their story or filler pools, copied from the corpus under ``root``."""
    for source in seeds:
        topic = seed(source).topic
        for path in (source, pool_path(BLUEPRINTS, topic)):
            target = root / path.relative_to(BLUEPRINTS)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
    return root


def use_corpus(config: Path, corpus: Path) -> None:
    data = yaml.safe_load(config.read_text(encoding="utf-8"))
    config.write_text(yaml.safe_dump({**data, "blueprints": str(corpus)}), encoding="utf-8")


@pytest.mark.llm
@pytest.mark.slow
def test_cli_build_against_llama_cpp_completes_and_reruns_from_cache(llama_server: LlamaServer, tmp_path: Path) -> None:  # noqa: F811
    dimensions = ("state_tracking", "temporal_grounding", "logical_adherence", "attention_recovery", "safe_coding")
    config = build_config(
        tmp_path, scale={"max_per_seed": 1, "llm": {"max_tokens": 16, "examples": 1, "lint_repairs": 0}},
        oracle_sufficiency={"keep_pending": True, "answer_max_tokens": 24, "judge_max_tokens": 32},
        oracle_necessity={"rollouts": 1, "max_guessed": 1, "answer_max_tokens": 24, "judge_max_tokens": 32},
        dialogues={"filler_exchanges": {k: (1, 1) for k in dimensions},
                   "llm": {"max_tokens": 48, "attempts": 1, "example_chars": 200}},
        variants={"llm": {"max_tokens": 48, "answer_max_tokens": 24, "attempts": 1}},
    )  # fmt: skip
    use_corpus(config, two_seed_corpus(tmp_path / "blueprints"))
    args = ["build", "--limit", "2", "--config", str(config), "--cache-dir", str(tmp_path / "cache"),
            "--llm-model", llama_server.model]  # fmt: skip
    with ScriptedServer(handler=forward_to(llama_server.base_url)) as proxy:  # the proxy keeps the request log
        first = run_cli(*args, "--out", str(tmp_path / "one"), "--llm-base-url", proxy.base_url)
        assert first.returncode == 0, first.stderr[-3000:]
        sent = len(proxy.chat_requests())
        second = run_cli(*args, "--out", str(tmp_path / "two"), "--llm-base-url", proxy.base_url)
        assert second.returncode == 0, second.stderr[-3000:]
        assert len(proxy.chat_requests()) == sent  # the rerun sent nothing
    (release,) = [p for p in (tmp_path / "one").iterdir() if p.is_dir() and not p.name.startswith(".")]
    manifest = json.loads((release / "manifest.json").read_text())
    stages = check_accounting(manifest, per_seed=1)
    assert stages["load_blueprints"]["items_out"] == 2 and sent > 0
    assert stages["oracle_sufficiency"]["llm"]["completion_tokens"] > 0
    (again,) = [p for p in (tmp_path / "two").iterdir() if p.is_dir() and not p.name.startswith(".")]
    for path in sorted((release / "data").rglob("*.parquet")):
        assert (again / "data" / path.relative_to(release / "data")).read_bytes() == path.read_bytes()
