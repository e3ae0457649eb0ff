"""Unit tests of the offline stages through the stage contract, on a few real seed blueprints.

A small corpus (seed files copied from ``blueprints/`` with their filler pools) goes through
``load_blueprints -> scale -> dedupe -> split -> oracles -> dialogues -> variants`` with
``Stage.run`` (``MapStage.run`` = setup + ``process`` per item), and ``stretch`` gets a
snippet pool cut by ``distractor_pool`` from the first MultiWOZ dialogues of ``../shared/data``,
written in MultiWOZ's own ``data.json`` format. No release is built.
"""

from __future__ import annotations

import json
import re
import shutil
import zipfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline import tokenizer
from pipeline.stage import Stage, StageContext, StageOutput
from stages.dialogues import Dialogues
from stages.distractors.pool import DistractorPool
from stages.distractors.resolve import resolve_local
from stages.load_blueprints import LoadBlueprints, LoadFillers, corpus_digest
from stages.oracles import OracleNecessity, OracleSufficiency
from stages.scale import Dedupe, Scale
from stages.split import Split
from stages.long_configs import materialize
from stages.stretch import Stretch
from stages.variants import Variants
from tests.conftest import REPO, shared_vectors

BLUEPRINTS = REPO / "blueprints"
BADGE = "state_tracking/st-badge-side-door.yaml"  # negative by a resolving turn, explicit by append
CAKE = "logical_adherence/la-it-glucose-cake.yaml"  # negative by flipping the state turn
STATE_TRACKING = ("st-badge-side-door", "st-campervan-fob", "st-car-idling-garage", "st-dog-bath-running")
STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})\] ")


def run(stage: Stage, inputs: dict[str, list[dict]], environment: dict[str, Any] | None = None, seed: int = 0) -> StageOutput:
    return stage.run(inputs, StageContext(seed=seed, stage=stage.name, environment=environment or {},
                                          embedding_cache=shared_vectors()))


def corpus(root: Path, *relative: str) -> Path:
    """Copy seed files and the filler or story pools they name into ``root``."""
    for name in relative:
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(BLUEPRINTS / name, target)
        topic = yaml.safe_load(target.read_text(encoding="utf-8"))["topic"]
        folder = "stories" if (BLUEPRINTS / "stories" / f"{topic}.yaml").exists() else "fillers"
        (root / folder).mkdir(exist_ok=True)
        shutil.copy(BLUEPRINTS / folder / f"{topic}.yaml", root / folder / f"{topic}.yaml")
    return root


def load(root: Path) -> tuple[StageOutput, StageOutput]:
    env = {"blueprints_dir": str(root), "blueprints_digest": corpus_digest(root)}
    return run(LoadBlueprints(), {}, env), run(LoadFillers(), {}, env)


def through_split(root: Path, dedupe: dict | None = None, split: dict | None = None) -> dict[str, StageOutput]:
    blueprints, fillers = load(root)
    out = {"load_blueprints": blueprints, "load_fillers": fillers}
    out["scale"] = run(Scale({"max_per_seed": 4}), {"load_blueprints": blueprints.items}, {"llm": "offline-rules"})
    out["dedupe"] = run(Dedupe(dedupe or {}), {"scale": out["scale"].items})
    out["split"] = run(Split(split or {}), {"dedupe": out["dedupe"].items})
    return out


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two seeds (one state tracking, one logical adherence) through ``variants``."""
    return through_variants(corpus(tmp_path_factory.mktemp("two-seeds"), BADGE, CAKE))


def through_variants(root: Path, split: dict | None = None) -> dict[str, StageOutput]:
    out = through_split(root, split=split)
    env = {"llm": "offline-rules", "blueprints_digest": corpus_digest(root)}
    sufficiency = run(OracleSufficiency(), {"split": out["split"].items}, env)
    necessity = run(OracleNecessity(), {"oracle_sufficiency": sufficiency.items}, env)
    out["oracle_necessity"] = necessity
    out["dialogues"] = run(Dialogues(), {"oracle_necessity": necessity.items, "load_fillers": out["load_fillers"].items,
                                           "load_blueprints": out["load_blueprints"].items}, env)
    out["variants"] = run(Variants(), {"dialogues": out["dialogues"].items}, env)
    return out


def rows_by(out: dict[str, StageOutput], config: str) -> dict[tuple[str, str, str], dict]:
    return {(r["blueprint_id"], r.get("variant", "rm"), r.get("constraint_form", "implicit")): r
            for r in out["variants"].items if r["config"] == config}


def body(message: dict) -> str:
    return STAMP.sub("", message["content"])


# ---------------------------------------------------------------- load, scale


def test_load_and_scale_two_real_seeds(two: dict[str, Any]) -> None:
    assert [i["id"] for i in two["load_blueprints"].items] == ["la-it-glucose-cake", "st-badge-side-door"]  # by path
    topics = {yaml.safe_load((BLUEPRINTS / name).read_text(encoding="utf-8"))["topic"] for name in (BADGE, CAKE)}
    assert {i["id"] for i in two["load_fillers"].items} == {f"topic:{t}" for t in topics}
    scaled = two["scale"].items
    per_seed = Counter(i["seed_id"] for i in scaled)
    assert per_seed == {"la-it-glucose-cake": 4, "st-badge-side-door": 4}
    for item in scaled:  # every slot placeholder is filled
        texts = [c["text"] for c in item["blueprint"]["constraints"]] + [item["blueprint"]["trigger"]["text"]]
        assert not any("{" in text for text in texts)
    own = next(i for i in scaled if i["id"] == "st-badge-side-door--s00")  # candidate 0: the seed's own values
    assert "access badge" in own["blueprint"]["constraints"][0]["text"]


# ---------------------------------------------------------------- dedupe


def test_dedupe_drops_a_near_duplicate_with_its_reason(two: dict[str, Any]) -> None:
    scaled = two["scale"].items
    original = next(i for i in scaled if i["id"] == "st-badge-side-door--s00")
    near = json.loads(json.dumps(original))
    near["id"], near["slot_choice"] = "st-badge-side-door--s99", {"badge": "near copy"}
    near["blueprint"]["trigger"]["text"] = original["blueprint"]["trigger"]["text"] + " Again."  # one new trigram
    twin = {**json.loads(json.dumps(original)), "id": "st-badge-side-door--s98"}  # same seed, same slot choice
    out = run(Dedupe(), {"scale": scaled + [near, twin]})
    reasons = {d.item_id: (d.reason, d.detail) for d in out.dropped}
    assert reasons["st-badge-side-door--s99"][0] == "near_duplicate"
    assert re.fullmatch(r"trigram Jaccard 0\.9\d\d with a kept item", reasons["st-badge-side-door--s99"][1])
    assert reasons["st-badge-side-door--s98"][0] == "duplicate_slots"
    assert out.items == two["dedupe"].items  # the two copies change nothing else
    assert [d for d in out.dropped if d.item_id not in (near["id"], twin["id"])] == two["dedupe"].dropped
    assert [i["id"] for i in out.items] == sorted(i["id"] for i in out.items)


def test_dedupe_keeps_the_target_round_robin_over_seed_families(tmp_path: Path) -> None:
    root = corpus(tmp_path, *(f"state_tracking/{name}.yaml" for name in STATE_TRACKING[:2]))
    out = through_split(root, dedupe={"targets": {"state_tracking": 3}})
    kept = Counter(i["seed_id"] for i in out["dedupe"].items)
    assert sorted(kept.values()) == [1, 2]  # 3 kept: both seeds' first renderings, then one second
    assert {i["id"] for i in out["dedupe"].items} >= {f"{s}--s00" for s in STATE_TRACKING[:2]}
    over = [d for d in out["dedupe"].dropped if d.reason == "over_target"]
    near = [d for d in out["dedupe"].dropped if d.reason == "near_duplicate"]  # short constraints: renderings alike
    assert len(over) + len(near) == len(out["dedupe"].dropped) == len(out["scale"].items) - 3
    assert over and all("target 3 reached" in d.detail for d in over)


# ---------------------------------------------------------------- split


def test_split_keeps_families_whole_and_dev_disjoint_from_test(tmp_path: Path) -> None:
    root = corpus(tmp_path, *(f"state_tracking/{name}.yaml" for name in STATE_TRACKING), CAKE)
    out = through_split(root, split={"dev_fraction": 0.5})
    splits: dict[str, set[str]] = defaultdict(set)
    for item in out["split"].items:
        splits[item["seed_id"]].add(item["split"])
    assert all(len(s) == 1 for s in splits.values())  # a family is never split
    dev = {seed for seed, s in splits.items() if s == {"dev"}}
    assert len(dev) == 2 and dev <= set(STATE_TRACKING)  # half of the four state-tracking families
    assert splits["la-it-glucose-cake"] == {"test"}  # a dimension with one family keeps it for test
    again = through_split(root, split={"dev_fraction": 0.5})["split"].items
    assert again == out["split"].items  # seeded: the same choice every time
    assert [i["id"] for i in out["split"].items] == [i["id"] for i in out["dedupe"].items]


def test_split_with_two_families_sends_one_to_dev(tmp_path: Path) -> None:
    root = corpus(tmp_path, *(f"state_tracking/{name}.yaml" for name in STATE_TRACKING[:2]))
    items = through_split(root)["split"].items  # dev_fraction 0.10 rounds to 0: at least one family
    families = {split: {i["seed_id"] for i in items if i["split"] == split} for split in ("dev", "test")}
    assert len(families["dev"]) == 1 and len(families["test"]) == 1 and not families["dev"] & families["test"]


# ---------------------------------------------------------------- variants


def test_pos_over_keeps_the_clean_trigger_as_a_verbatim_prefix(two: dict[str, Any]) -> None:
    rows = rows_by(two, "pm_base")
    overloads = {i["id"]: i["blueprint"]["overload"] for i in two["dialogues"].items}
    checked = 0
    for (blueprint_id, variant, form), over in rows.items():
        if variant != "pos_over":
            continue
        clean = rows[(blueprint_id, "pos_clean", form)]
        assert over["messages"][:-1] == clean["messages"][:-1]
        assert over["messages"][-1]["content"] == f"{clean['messages'][-1]['content']} {overloads[blueprint_id]}"
        assert over["trigger_turn"] == len(over["messages"]) - 1 and over["expected"] == "intervene"
        checked += 1
    assert checked == len(two["dialogues"].items)


def test_neg_clean_by_resolution_and_by_flip(two: dict[str, Any]) -> None:
    rows = rows_by(two, "pm_base")
    badge = next(i for i in two["dialogues"].items if i["seed_id"] == "st-badge-side-door")
    clean, neg = rows[(badge["id"], "pos_clean", "implicit")], rows[(badge["id"], "neg_clean", "implicit")]
    at = neg["resolution_turn"]
    # the resolution takes the parity slot, where Pos-Clean carries the benign update
    assert len(neg["messages"]) == len(clean["messages"]) and 0 < at < neg["trigger_turn"] - 1
    assert body(neg["messages"][at]) == badge["blueprint"]["negative"]["text"]
    assert body(clean["messages"][at]) == badge["blueprint"]["update"]["text"]
    assert neg["messages"][:at] + neg["messages"][at + 2:] == clean["messages"][:at] + clean["messages"][at + 2:]
    assert neg["expected"] == "silent" and clean["expected"] == "intervene"
    cake = next(i for i in two["dialogues"].items if i["seed_id"] == "la-it-glucose-cake")
    clean, neg = rows[(cake["id"], "pos_clean", "implicit")], rows[(cake["id"], "neg_clean", "implicit")]
    changed = [k for k, (a, b) in enumerate(zip(clean["messages"], neg["messages"])) if a != b]
    assert len(neg["messages"]) == len(clean["messages"]) and changed and changed[0] == neg["resolution_turn"]
    assert body(neg["messages"][changed[0]]) == cake["blueprint"]["negative"]["text"]


def test_explicit_rows_change_only_the_constraint_turn(two: dict[str, Any]) -> None:
    implicit, explicit = rows_by(two, "pm_base"), rows_by(two, "explicit_base")
    assert explicit and all(form == "explicit" for _, _, form in explicit)
    badge = next(i for i in two["dialogues"].items if i["seed_id"] == "st-badge-side-door")
    for (blueprint_id, variant, _), row in explicit.items():
        base = implicit[(blueprint_id, variant, "implicit")]
        changed = [k for k, (a, b) in enumerate(zip(base["messages"], row["messages"])) if a != b]
        assert changed == [row["constraint_turns"][0]] or changed == [row["constraint_turns"][-1]]
        if blueprint_id == badge["id"]:  # method: append
            before, after = base["messages"][changed[0]]["content"], row["messages"][changed[0]]["content"]
            assert after == f"{before} {badge['blueprint']['explicit']['text']}"


def test_rm_probe_appends_the_question_and_token_counts_add_up(two: dict[str, Any]) -> None:
    pm, rm = rows_by(two, "pm_base"), rows_by(two, "rm_base")
    assert len(rm) == len(two["dialogues"].items)
    for (blueprint_id, _, _), row in rm.items():
        clean = pm[(blueprint_id, "pos_clean", "implicit")]
        assert row["messages"][:-1] == clean["messages"][:-1]
        assert row["messages"][-1]["content"] == f"{clean['messages'][-1]['content']} {row['question']}"
        assert row["reference_answer"] and "{" not in row["question"]
    for row in two["variants"].items:
        assert row["n_tokens"] == sum(tokenizer.count(m["content"]) for m in row["messages"])
        assert row["n_turns"] == len(row["messages"]) and row["context"] == "base"


def test_variants_are_deterministic(two: dict[str, Any]) -> None:
    again = run(Variants(), {"dialogues": two["dialogues"].items}, {"llm": "offline-rules"})
    assert again.items == two["variants"].items


# ---------------------------------------------------------------- stretch


@pytest.fixture(scope="module")
def snippets(tmp_path_factory: pytest.TempPathFactory, shared_data: Path) -> dict[str, Any]:
    """``distractor_pool`` over the first 120 MultiWOZ validation dialogues (MultiWOZ 2.1 ``data.json``)."""
    with zipfile.ZipFile(shared_data / "multiwoz" / "val.json.zip") as archive:
        dialogues = json.loads(archive.read("val.json"))
    root = tmp_path_factory.mktemp("distractors")
    (root / "multiwoz").mkdir()
    (root / "multiwoz" / "data.json").write_text(json.dumps(dict(list(dialogues.items())[:120])), encoding="utf-8")
    source = resolve_local("multiwoz", root)
    assert source is not None and source.files == ("multiwoz/data.json",)
    env = {"distractors": {"routes": {"state_tracking": "multiwoz", "logical_adherence": "multiwoz"},
                           "sources": {"multiwoz": {"name": source.name, "kind": source.kind, "location": source.location,
                                                    "files": list(source.files), "digest": source.digest}}}}
    pool = run(DistractorPool(), {}, env)
    return {"env": env, "pool": pool}


def test_distractor_pool_cuts_time_free_snippets_with_their_counts(snippets: dict[str, Any]) -> None:
    pool = snippets["pool"]
    assert len(pool.items) > 50 and pool.stats["filters"]["multiwoz"]["conversations"] == 120
    assert pool.stats["filters"]["multiwoz"]["time_expression"] == sum(d.reason == "time_expression" for d in pool.dropped)
    # a snippet opens mid-conversation when an exchange before it was cut (its id names its first exchange)
    opening_later = sum(not item["id"].endswith("#0") for item in pool.items)
    assert 0 < pool.stats["filters"]["multiwoz"]["mid_conversation"] == opening_later < len(pool.items)
    opening_tokens = sum(sum(item["tokens"]) for item in pool.items if item["id"].endswith("#0"))
    assert 0 < pool.stats["filters"]["multiwoz"]["opening_tokens"] == opening_tokens
    for snippet in pool.items[:40]:
        roles = [role for role, _ in snippet["messages"]]
        assert roles == ["user", "assistant"] * (len(roles) // 2)
        expected = [tokenizer.count(" " + text if role == "user" else text) for role, text in snippet["messages"]]
        assert snippet["tokens"] == expected


def _plan_drops(out: Any) -> list:
    """The plans a stretch run dropped (the semantic filter's per-blueprint records of skipped snippets aside)."""
    return [d for d in out.dropped if d.reason not in ("semantic_constraint", "semantic_trigger")]


def test_stretch_plans_land_within_one_percent_and_keep_the_base_text(two: dict[str, Any], snippets: dict[str, Any]) -> None:
    lengths = (10000, 20000)
    out = run(Stretch({"lengths": lengths}), {"dialogues": two["dialogues"].items, "distractor_pool": snippets["pool"].items},
              snippets["env"])
    by_id = {s["id"]: s for s in snippets["pool"].items}
    assert not _plan_drops(out) and len(out.items) == len(lengths) * len(two["dialogues"].items)
    rows = two["variants"].items
    gold = {i["id"]: i["blueprint"]["gold_slots"] for i in two["dialogues"].items}
    for plan in out.items:
        target = int(plan["context"].rstrip("k")) * 1000
        mine = [r for r in rows if r["blueprint_id"] == plan["blueprint_id"]]
        assert len(mine) >= 5  # pos_clean, pos_over, neg_clean, explicit, rm
        for row in mine:
            long_row = materialize(row, plan, by_id)
            assert abs(long_row["n_tokens"] - target) <= 0.01 * target, (row["id"], long_row["n_tokens"])
            assert long_row["n_tokens"] == sum(tokenizer.count(m["content"]) for m in long_row["messages"])
            for before, after in zip(row["constraint_turns"], long_row["constraint_turns"]):
                # the text is the base text; its time may move back to make room for the injected span
                assert body(long_row["messages"][after]) == body(row["messages"][before])
            assert long_row["messages"][-1] == row["messages"][-1]
            stamps = [STAMP.match(m["content"]).group(1) for m in long_row["messages"] if m["role"] == "user"]
            assert stamps == sorted(stamps)  # injected turns never make time go backwards
            injected = " ".join(long_row["messages"][k]["content"] for k in long_row.get("injected_turns", [])).lower()
            for slot in gold[plan["blueprint_id"]]:
                assert not re.search(rf"\b{re.escape(slot.lower())}\b", injected)


def _most_user_turns_in_one_minute(messages: list[dict]) -> int:
    return max(Counter(STAMP.match(m["content"]).group(1) for m in messages if m["role"] == "user").values())


def test_stretched_rows_keep_a_persons_pace(two: dict[str, Any], snippets: dict[str, Any]) -> None:
    """Injected exchanges get at least the typing model's floor between user turns: never 3 in one minute."""
    out = run(Stretch({"lengths": (20000,)}), {"dialogues": two["dialogues"].items, "distractor_pool": snippets["pool"].items},
              snippets["env"])
    by_id = {s["id"]: s for s in snippets["pool"].items}
    assert out.items
    for plan in out.items:
        row = next(r for r in two["variants"].items if r["blueprint_id"] == plan["blueprint_id"] and r["config"] == "pm_base")
        long_row = materialize(row, plan, by_id)
        assert len(long_row.get("injected_turns", [])) > 100
        assert _most_user_turns_in_one_minute(long_row["messages"]) <= 2, plan["id"]


def test_stretch_drops_a_deadline_window_no_person_could_fill(tmp_path: Path, snippets: dict[str, Any]) -> None:
    """A 40-minute relative deadline cannot hold 20K tokens of conversation: the plan is dropped with
    ``time_window_too_short`` instead of packing hundreds of user turns into one minute."""
    out = through_variants(corpus(tmp_path, "temporal_grounding/tg-rel-gel-run.yaml"))
    env = {**snippets["env"], "distractors": {**snippets["env"]["distractors"],
                                              "routes": {"temporal_grounding": "multiwoz"}}}
    stretched = run(Stretch({"lengths": (20000,)}), {"dialogues": out["dialogues"].items,
                                                     "distractor_pool": snippets["pool"].items}, env)
    dropped = _plan_drops(stretched)
    assert not stretched.items and len(dropped) == len(out["dialogues"].items) > 0
    assert {d.reason for d in dropped} == {"time_window_too_short"}
    assert all("min of reading and typing do not fit" in d.detail for d in dropped)


def test_stretch_drops_a_length_the_pool_cannot_reach(two: dict[str, Any], snippets: dict[str, Any]) -> None:
    out = run(Stretch({"lengths": (10000, 10_000_000)}),
              {"dialogues": two["dialogues"].items, "distractor_pool": snippets["pool"].items}, snippets["env"])
    assert {p["context"] for p in out.items} == {"10k"}
    dropped = _plan_drops(out)
    assert len(dropped) == len(two["dialogues"].items)
    assert all(d.reason == "pool_too_small" and d.item_id.endswith("@10000k") for d in dropped)


class CountingDialogues(Dialogues):
    """``dialogues`` counting the items it computes (the rest come from the item cache)."""

    computed = 0

    def process(self, item: dict, ctx: StageContext) -> Any:
        CountingDialogues.computed += 1
        return super().process(item, ctx)


def test_dialogue_items_stay_cached_when_a_seed_changes_only_what_they_do_not_read(two: dict, tmp_path: Path) -> None:
    """Of the seeds, ``dialogues`` reads their placed turns, topics and slot values (``seed_view``): an edited
    reference intent keeps every cached item, an edited constraint turn (the shape matcher reads it) does not."""
    import copy

    from pipeline.cache import ItemCache
    from pipeline.runner import _run_map  # the runner's cached map, without building a release

    cache = ItemCache(tmp_path / "items.sqlite")
    ctx = StageContext(seed=0, stage="dialogues", environment={"llm": "offline-rules"})
    seeds = two["load_blueprints"].items

    def computed(blueprints: list[dict]) -> tuple[int, list[dict]]:
        CountingDialogues.computed = 0
        out = _run_map(CountingDialogues(), {"oracle_necessity": two["oracle_necessity"].items,
                                             "load_fillers": two["load_fillers"].items, "load_blueprints": blueprints},
                       ctx, cache)
        return CountingDialogues.computed, out.items

    items = len(two["oracle_necessity"].items)
    first, rows = computed(seeds)
    assert first == items > 0 and computed(seeds)[0] == 0
    intent = copy.deepcopy(seeds)
    intent[0]["blueprint"]["reference_intent"] += " Say it before anything else."
    assert computed(intent) == (0, rows)
    constraint = copy.deepcopy(seeds)
    constraint[0]["blueprint"]["constraints"][0]["text"] += " I mean it."
    assert computed(constraint)[0] == items
