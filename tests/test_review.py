"""The review queue round trip: flag -> export -> a person edits the file -> the next build imports it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipeline.review import ReviewFileError, apply_fix, content_hash, decisions_digest, export_queue, load_decisions
from pipeline.stage import StageContext
from stages.oracles import OracleSufficiency
from tests.servers.scripted import ScriptedServer
from tests.test_oracles import TAXI, TRAIN, scaled_item, scripted_client, scripted_model


def flawed_items() -> list[dict[str, Any]]:
    """A sound blueprint and two that the offline sufficiency oracle flags."""
    taxi, train = scaled_item(TAXI), scaled_item(TRAIN)
    unstated = copy.deepcopy(taxi)
    unstated["id"] = "st-taxi-instrument--s01"
    unstated["blueprint"]["id"] = unstated["id"]
    unstated["blueprint"]["gold_slots"] = ["cello", "glovebox"]
    late = copy.deepcopy(taxi)
    late["id"] = "st-taxi-instrument--s02"
    late["blueprint"]["id"] = late["id"]
    late["blueprint"]["negative"]["at"] = "2026-05-09T19:30"  # "resolves" after the trigger
    return [train, unstated, late]


def build(items: list[dict[str, Any]], review: Path) -> tuple[Any, str]:
    stage = OracleSufficiency({"review_file": str(review)})
    ctx = StageContext(seed=0, stage=stage.name, environment={"llm": "offline-rules"})
    return stage.run({"split": items}, ctx), stage.fingerprint(["input"], ctx)


def decide(review: Path, choices: dict[str, dict[str, Any]]) -> None:
    """What a reviewer does: edit ``decision`` / ``fix`` / ``note`` of some entries."""
    entries = yaml.safe_load(review.read_text(encoding="utf-8"))
    for entry in entries:
        entry.update(choices.get(entry["id"], {}))
    review.write_text(yaml.safe_dump(entries, sort_keys=False), encoding="utf-8")


def test_flagged_blueprints_round_trip_through_the_review_file(tmp_path: Path) -> None:
    review = tmp_path / "review" / "queue.yaml"
    items = flawed_items()
    first, fingerprint = build(items, review)
    assert [i["id"] for i in first.items] == ["tg-abs-train-departure--s00"]
    assert [(d.item_id, d.reason) for d in first.dropped] == [
        ("st-taxi-instrument--s01", "sufficiency_flagged"), ("st-taxi-instrument--s02", "sufficiency_flagged")]  # fmt: skip
    text = review.read_text(encoding="utf-8")
    assert text.startswith("# triggerbench review queue")
    entries = yaml.safe_load(text)
    assert [(e["id"], e["decision"], e["oracle"]) for e in entries] == [
        ("st-taxi-instrument--s01", None, "sufficiency"), ("st-taxi-instrument--s02", None, "sufficiency")]  # fmt: skip
    assert entries[0]["content_hash"] == content_hash(items[1]["blueprint"])
    assert entries[0]["reasons"] == ["gold_slots_in_constraint: not stated in the constraint: glovebox"]
    assert entries[0]["blueprint"]["gold_slots"] == ["cello", "glovebox"]

    # unchanged queue, same decisions: same fingerprint (exporting pending entries changes nothing)
    assert build(items, review)[1] == fingerprint

    decide(review, {
        "st-taxi-instrument--s01": {"decision": "fix", "fix": {"gold_slots.1": "trunk"}, "note": "slot typo"},
        "st-taxi-instrument--s02": {"decision": "reject", "note": "timeline cannot be repaired"},
    })  # fmt: skip
    second, new_fingerprint = build(items, review)
    assert new_fingerprint != fingerprint  # decisions rerun the stage
    kept = {i["id"]: i for i in second.items}
    assert list(kept) == ["tg-abs-train-departure--s00", "st-taxi-instrument--s01"]
    fixed = kept["st-taxi-instrument--s01"]
    assert fixed["blueprint"]["gold_slots"] == ["cello", "trunk"]
    record = fixed["oracles"]["sufficiency"]
    assert (record["status"], record["passed"], record["review"]["note"]) == ("pass_after_fix", True, "slot typo")
    assert record["first_check"]["passed"] is False
    assert [(d.item_id, d.reason, d.detail) for d in second.dropped] == [
        ("st-taxi-instrument--s02", "sufficiency_rejected_in_review", "timeline cannot be repaired")]
    outcomes = {e["id"]: (e["decision"], e["outcome"]) for e in yaml.safe_load(review.read_text(encoding="utf-8"))}
    assert outcomes == {
        "st-taxi-instrument--s01": ("fix", "kept (fixed, passed the second check)"),
        "st-taxi-instrument--s02": ("reject", "dropped (rejected in review)"),
    }


def test_an_invalid_fix_is_dropped_and_accept_keeps(tmp_path: Path) -> None:
    review = tmp_path / "queue.yaml"
    items = flawed_items()
    build(items, review)
    decide(review, {
        "st-taxi-instrument--s01": {"decision": "fix", "fix": {"gold_slots.1": "sunroof"}},
        "st-taxi-instrument--s02": {"decision": "accept"},
    })  # fmt: skip
    out, _ = build(items, review)
    assert [(d.item_id, d.reason) for d in out.dropped] == [("st-taxi-instrument--s01", "sufficiency_fix_invalid")]
    assert "sunroof" in out.dropped[0].detail  # the blueprint lint names the problem
    accepted = next(i for i in out.items if i["id"] == "st-taxi-instrument--s02")
    assert accepted["oracles"]["sufficiency"]["status"] == "accepted_in_review"


def test_llm_review_round_trip_with_a_second_check(tmp_path: Path) -> None:
    review = tmp_path / "queue.yaml"
    taxi = scaled_item(TAXI)
    original_trigger = taxi["blueprint"]["trigger"]["text"]
    taxi["blueprint"]["trigger"]["text"] = "We just pulled up at the curb outside the hotel, I'm paying now."
    stage = OracleSufficiency({"review_file": str(review)})
    with ScriptedServer(handler=scripted_model) as server:
        llm = scripted_client(server, tmp_path / "llm.sqlite")
        ctx = StageContext(seed=0, stage=stage.name, environment={"llm": "test"}, services={"llm": llm})
        first = stage.run({"split": [taxi]}, ctx)
        assert [(d.item_id, d.reason) for d in first.dropped] == [(taxi["id"], "sufficiency_flagged")]
        entry = yaml.safe_load(review.read_text(encoding="utf-8"))[0]
        assert entry["method"] == "llm:scripted-model"
        assert entry["checks"][0]["response"] == "Enjoy the hotel!"  # the evidence a reviewer sees
        decide(review, {taxi["id"]: {"decision": "fix", "fix": {"trigger.text": "Curb stop, paying now, bye!"}}})
        still = stage.run({"split": [taxi]}, ctx)
        assert [(d.item_id, d.reason) for d in still.dropped] == [(taxi["id"], "sufficiency_failed_after_fix")]
        decide(review, {taxi["id"]: {"fix": {"trigger.text": original_trigger}}})
        fixed = stage.run({"split": [taxi]}, ctx)
    assert [i["blueprint"]["trigger"]["text"] for i in fixed.items] == [original_trigger]
    assert fixed.items[0]["oracles"]["sufficiency"]["status"] == "pass_after_fix"
    assert fixed.stats["llm"]["requests"] > 0


def test_a_decision_stops_applying_when_the_blueprint_changes(tmp_path: Path) -> None:
    review = tmp_path / "queue.yaml"
    items = flawed_items()
    build(items, review)
    decide(review, {"st-taxi-instrument--s02": {"decision": "accept"}})
    items[2]["blueprint"]["trigger"]["text"] += " Almost there."  # edited source: a new version
    out, _ = build(items, review)
    assert ("st-taxi-instrument--s02", "sufficiency_flagged") in [(d.item_id, d.reason) for d in out.dropped]
    entries = yaml.safe_load(review.read_text(encoding="utf-8"))
    versions = [(e["id"], e["decision"]) for e in entries if e["id"] == "st-taxi-instrument--s02"]
    assert sorted(versions, key=str) == sorted([("st-taxi-instrument--s02", "accept"),
                                                ("st-taxi-instrument--s02", None)], key=str)  # old decision kept


def test_review_file_errors_name_the_entry(tmp_path: Path) -> None:
    review = tmp_path / "queue.yaml"
    export_queue(review, [{"id": "bp-1", "content_hash": "abc", "oracle": "sufficiency", "reasons": ["x"]}])
    assert load_decisions(review) == {}
    digest = decisions_digest(review)
    decide(review, {"bp-1": {"decision": "maybe"}})
    with pytest.raises(ReviewFileError, match=r"entry 0 \(bp-1\): decision: expected one of accept, reject, fix"):
        load_decisions(review)
    decide(review, {"bp-1": {"decision": "fix", "fix": {}}})
    with pytest.raises(ReviewFileError, match="fix decision needs"):
        load_decisions(review)
    decide(review, {"bp-1": {"decision": "reject"}})
    assert decisions_digest(review) != digest
    with pytest.raises(ReviewFileError, match="no field 'nowhere'"):
        apply_fix({"trigger": {"text": "a"}}, {"nowhere.text": "b"})
    with pytest.raises(ReviewFileError, match="not an index below 1"):
        apply_fix({"constraints": [{"text": "a"}]}, {"constraints.3.text": "b"})
    assert apply_fix({"constraints": [{"text": "a"}]}, {"constraints.0.text": "b"}) == {"constraints": [{"text": "b"}]}
